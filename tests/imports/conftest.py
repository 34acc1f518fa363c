"""Real MLflow stores (a file store and a sqlite database) built once per run by MLflow's own
client, in a child process."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _mlflow_store import MlflowStore
from _support import require_component

LAB = Path(__file__).with_name("_mlflow_lab.py")


def _build(uri: str, work: Path) -> dict[str, str]:
    require_component(
        importlib.util.find_spec("mlflow"), "mlflow", "pip install 'ledger-repro[mlflow]'"
    )
    r = subprocess.run(
        [sys.executable, str(LAB), uri, str(work)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def _once(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], dict[str, str]]
) -> tuple[Path, dict[str, str]]:
    """The folder ``name`` of the whole pytest run and the run ids ``build`` returned for it,
    built by the first process that asks: under xdist each worker built stores of its own (2.7 s
    and 5.4 s of CPU, an MLflow client each). The workers share the run's temp folder (each
    has its own folder in it); the others wait on a lock and read what the first wrote. The
    tests only read the stores (tests/imports/test_mlflow_bad_input.py damages copies). A
    failed build leaves nothing: the next process to ask builds again."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    work, done = base / name, base / f"{name}.json"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            work.mkdir()
            try:
                ids = build(work)
            except BaseException:
                shutil.rmtree(work)
                raise
            part = base / f"{name}.json.part"
            part.write_text(json.dumps(ids))
            part.rename(done)
    return work, dict(json.loads(done.read_text()))


@pytest.fixture(scope="session")
def file_store(tmp_path_factory: pytest.TempPathFactory) -> MlflowStore:
    work, ids = _once(tmp_path_factory, "mlflow-file", lambda w: _build((w / "mlruns").as_uri(), w))
    path = work / "mlruns"
    return MlflowStore(path.as_uri(), path, ids)


@pytest.fixture(scope="session")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> MlflowStore:
    require_component(
        importlib.util.find_spec("sqlalchemy"), "sqlalchemy", "pip install 'ledger-repro[mlflow]'"
    )
    work, ids = _once(
        tmp_path_factory, "mlflow-sqlite", lambda w: _build(f"sqlite:///{w / 'mlflow.db'}", w)
    )
    path = work / "mlflow.db"
    return MlflowStore(f"sqlite:///{path}", path, ids)
