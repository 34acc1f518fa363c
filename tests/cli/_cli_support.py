"""Helpers for the CLI tests: a small git project with a ledger."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, subprocess_env

TRAIN = """\
import sys
for step in range(3):
    print(f"step {step} loss {1.0 / (step + 1):.4f}", flush=True)
print("to stderr", file=sys.stderr)
"""

METRIC = r"step (?P<step>\d+) loss (?P<loss>\S+)"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        },
    )


def make_project(root: Path) -> Path:
    repo = root / "proj"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    (repo / "data.txt").write_text("x\n" * 10)
    (repo / ".gitignore").write_text(".ledger/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    return repo


def run_ids(repo: Path) -> list[str]:
    """Full run ids, oldest first."""
    return sorted(p.name for p in (repo / ".ledger" / "refs" / "runs").iterdir())


def on_a_terminal(argv: list[str], cwd: Path, *, typer: bool = False) -> tuple[int, bytes]:
    """Exit status and what a command writes to a terminal 100 columns wide (``typer``: through
    ``ledger.cli.app.main`` instead of ``python -m ledger``)."""
    entry = ["-c", "from ledger.cli.app import main; main()"] if typer else ["-m", "ledger"]
    leader, follower = pty.openpty()
    env = subprocess_env(COLUMNS="100", LINES="40", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, *entry, *argv], cwd=cwd, env=env, stdout=follower, stderr=follower
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
