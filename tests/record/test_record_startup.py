"""Start-up: ``ledger record`` imports neither the CLI framework nor heavy libraries.

``ledger record -- CMD`` pays its imports on every run (bench/bench_record.py): the plain form
runs without typer/click (ledger/cli/entry.py), and the index talks to ``sqlite3`` directly
(sqlite_utils brought click, pluggy, dateutil, and pandas and numpy when installed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, subprocess_env

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from ledger.index import Index
print(Index.__name__, sorted(m for m in ("sqlite_utils", "pandas", "numpy", "click")
                             if m in sys.modules))
"""

# pydantic: the records of a plain run are written as JSON (ledger/records/plain.py), ~0.1 s.
NOT_ON_THE_RECORD_PATH = (
    "typer",
    "click",
    "rich",
    "sqlite_utils",
    "pandas",
    "numpy",
    "torch",
    "pydantic",
    "pydantic_core",
)


def test_index_imports_no_sqlite_utils_pandas_or_numpy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "Index []"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("print('training')\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def test_record_imports_no_cli_framework(project: Path) -> None:
    env = {**subprocess_env(), "PYTHONPROFILEIMPORTTIME": "1"}
    argv = [sys.executable, "-m", "ledger", "record", "-n", "fast", "--"]
    r = subprocess.run(
        [*argv, sys.executable, "-c", "pass"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert re.search(r"^ledger: run \S+ succeeded", r.stderr, re.M), r.stderr
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", r.stderr, re.M))
    assert "ledger.run.record" in imported, "no import timings: -X importtime did not apply"
    top = {name.split(".")[0] for name in imported}
    assert not top & set(NOT_ON_THE_RECORD_PATH), sorted(top & set(NOT_ON_THE_RECORD_PATH))
    assert "ledger.cli.query_cmd" not in imported  # record's parser comes first (entry.py)
