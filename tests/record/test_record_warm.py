"""Imports warmed while the recorded command runs (ledger/run/warm.py).

The lists name modules the seal (and a replay's judging) really imports after the exit: a name
that went stale would cost a useless import on every run, one that is missing only time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, init_ledger

# Records `python -c pass` with warming switched off, and prints which modules were imported
# only after the command exited.
PROBE = """
import json, sys, threading
import ledger.run.record as rr
from ledger.store import Store
from ledger.run.options import RecordOptions

def no_warm(modules):
    t = threading.Thread(target=lambda: None)
    t.start()
    return t

rr.warm_imports = no_warm
after = {}
execute = rr.execute
def timed_execute(*a, **k):
    result = execute(*a, **k)
    after["modules"] = set(sys.modules)
    return result
rr.execute = timed_execute
rr.record(RecordOptions(command=[sys.executable, "-c", "pass"], metrics=[r"x (?P<x>\\d+)"]),
          Store.open(None))
print(json.dumps(sorted(set(sys.modules) - after["modules"])))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    (root / "train.py").write_text("print('x 1')\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def test_seal_modules_are_what_the_seal_imports(project: Path) -> None:
    from ledger.run.warm import SEAL_MODULES

    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    imported_after_exit = set(json.loads(out))
    assert set(SEAL_MODULES) <= imported_after_exit, set(SEAL_MODULES) - imported_after_exit


def test_warm_imports_builds_models_and_survives_errors() -> None:
    code = """
import sys
from ledger.run.warm import warm_imports
t = warm_imports(["ledger.no_such_module", "ledger.records.verdict:NoSuchModel",
                  "ledger.records.verdict:Verdict", "colorsys"])
t.join()
from ledger.records.verdict import Verdict
print(Verdict.__pydantic_complete__, "colorsys" in sys.modules)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["True", "True"]


def test_models_are_built_at_first_use() -> None:
    """defer_build: importing the records builds no validator; the first use does."""
    code = """
from ledger.records.verdict import Verdict
from ledger.records.run import Run
before = (Verdict.__pydantic_complete__, Run.__pydantic_complete__)
Run.model_json_schema()
print(before, Run.__pydantic_complete__)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "(False, False) True"
