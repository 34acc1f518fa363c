"""Helpers for sharing tests: a real git repository with a ledger, and recording into it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

SCRIPT = "import sys\nrows = open('data.csv').read().split()\nprint(f'epoch 0 loss {len(rows)}')\n"


def git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@e",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@e",
    }


def make_repo(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "data.csv").write_text("x\n1\n2\n")
    (root / ".gitignore").write_text(".ledger/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=git_env())
    init_ledger(root)
    return root


def record(repo: Path, *args: str) -> str:
    r = run_ledger(
        "record", "--json", "--input", "data.csv", *args, "--", sys.executable, "train.py",
        cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
