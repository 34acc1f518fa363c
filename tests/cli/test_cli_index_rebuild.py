"""An index written by another version of ledger is folded again on first use; at 10^5 runs that
takes about a minute, so `ls` and `show` say why they wait, on a terminal only."""

from __future__ import annotations

import os
import pty
import select
import sqlite3
import subprocess
import sys
from pathlib import Path

from _cli_support import make_project
from _support import run_ledger, subprocess_env

NOTICE = b"rebuilding the index"


def _age_index(repo: Path) -> None:
    """Mark the index as written by an older layout, as after an upgrade."""
    with sqlite3.connect(repo / ".ledger" / "index.sqlite") as db:
        db.execute("UPDATE meta SET value='3' WHERE key='version'")


def _on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, bytes]:
    leader, follower = pty.openpty()
    env = subprocess_env(COLUMNS="100", LINES="40", TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv], cwd=cwd, env=env, stdout=follower, stderr=follower
    )
    os.close(follower)
    out = b""
    try:
        while select.select([leader], [], [], 60)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        rc = proc.wait(timeout=60)
        os.close(leader)
    return rc, out


def test_ls_and_show_say_the_index_is_rebuilt_on_a_terminal(tmp_path: Path) -> None:
    repo = make_project(tmp_path)
    r = run_ledger("record", "--name", "one", "--", sys.executable, "train.py", cwd=repo)
    assert r.returncode == 0, r.stderr
    for argv in (["ls"], ["show", "one"]):
        _age_index(repo)
        rc, out = _on_a_terminal(argv, repo)
        assert rc == 0, out
        assert NOTICE in out, out
        assert b"one" in out
        # Rebuilt: the next command has nothing to fold and says nothing.
        rc, out = _on_a_terminal(argv, repo)
        assert rc == 0 and NOTICE not in out, out


def test_a_pipe_gets_no_notice(tmp_path: Path) -> None:
    repo = make_project(tmp_path)
    assert run_ledger("record", "--", sys.executable, "train.py", cwd=repo).returncode == 0
    _age_index(repo)
    r = run_ledger("ls", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "rebuilding" not in r.stdout + r.stderr
    with sqlite3.connect(repo / ".ledger" / "index.sqlite") as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    assert version != "3"
