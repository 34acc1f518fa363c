"""An index written by another version of ledger is folded again on first use; at 10^5 runs that
takes about a minute, so `ls` and `show` say why they wait, on a terminal only."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from _cli_support import make_project, on_a_terminal
from _support import run_ledger

NOTICE = b"rebuilding the index"


def _age_index(repo: Path) -> None:
    """Mark the index as written by an older layout, as after an upgrade."""
    with sqlite3.connect(repo / ".ledger" / "index.sqlite") as db:
        db.execute("UPDATE meta SET value='3' WHERE key='version'")


def test_ls_and_show_say_the_index_is_rebuilt_on_a_terminal(tmp_path: Path) -> None:
    repo = make_project(tmp_path)
    r = run_ledger("record", "--name", "one", "--", sys.executable, "train.py", cwd=repo)
    assert r.returncode == 0, r.stderr
    for argv in (["ls"], ["show", "one"]):
        _age_index(repo)
        rc, out = on_a_terminal(argv, repo)
        assert rc == 0, out
        assert NOTICE in out, out
        assert b"one" in out
        # Rebuilt: the next command has nothing to fold and says nothing.
        rc, out = on_a_terminal(argv, repo)
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
