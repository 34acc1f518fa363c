"""Item 6: progress on stderr only when stderr is a terminal; nothing when it is not."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger, subprocess_env


def _run_on_pty(argv: list[str], cwd: Path) -> tuple[int, bytes]:
    """Run ledger with stderr on a pseudo-terminal; stdout piped. Returns (rc, stderr bytes)."""
    leader, follower = pty.openpty()
    env = subprocess_env()
    env.pop("LEDGER_NO_PROGRESS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.stdout is not None
    proc.stdout.read()
    proc.stdout.close()
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks)


@pytest.mark.parametrize(
    "argv, text", [(["verify"], b"verif"), (["gc"], b"unreachable"), (["reindex"], b"index")]
)
def test_progress_only_on_a_terminal(project: Path, argv: list[str], text: bytes) -> None:
    rc, err = _run_on_pty(argv, project)
    assert rc == 0, err
    assert text in err, err
    piped = run_ledger(*argv, cwd=project)
    assert piped.returncode == 0 and piped.stderr == ""


def test_seeds_replay_prints_one_line_per_seed_on_a_terminal(project: Path) -> None:
    from _cli_support import run_ids

    argv = ["replay", run_ids(project)[0], "--mode", "seeds", "--seeds", "2", "--metric", "loss"]
    rc, err = _run_on_pty(argv, project)
    text = err.decode(errors="replace")
    # The script ignores the seed, so seeds mode refuses a verdict (exit 7) after the replays:
    # each seed's line is printed as it finishes all the same.
    assert rc == 7 and "the seed never reached" in text, text
    for i in (1, 2):
        assert re.search(rf"seed {i}/2  \d+  run \S+ succeeded: 0\.3333", text), text
    piped = run_ledger(*argv, cwd=project)
    assert piped.returncode == 7 and "seed 1/2" not in piped.stderr


def test_no_progress_in_process_when_not_a_terminal(project: Path, cli: Any) -> None:
    for argv in (["verify"], ["gc"], ["reindex"]):
        r = cli(*argv, "-L", str(project / ".ledger"))
        assert r.exit_code == 0 and r.stderr == "", r.stderr
