"""A real ledger with one recorded run in a real git repository, packaged once per module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import run_ledger

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
    assert run_ledger("init", cwd=root).returncode == 0
    return root


def record(repo: Path, *args: str) -> str:
    r = run_ledger(
        "record", "--json", "--input", "data.csv", *args, "--", sys.executable, "train.py",
        cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """(repo, run id, package path)."""
    base = tmp_path_factory.mktemp("authors")
    repo = make_repo(base / "repo")
    run_id = record(repo)
    pkg = base / "run.ledgerpkg"
    r = run_ledger("export", run_id, "-o", str(pkg), cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo, run_id, pkg
