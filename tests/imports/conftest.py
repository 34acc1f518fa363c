"""Real MLflow stores (a file store and a sqlite database) built once per session by MLflow's
own client, in a child process."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
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


@pytest.fixture(scope="session")
def file_store(tmp_path_factory: pytest.TempPathFactory) -> MlflowStore:
    work = tmp_path_factory.mktemp("mlflow-file")
    path = work / "mlruns"
    return MlflowStore(path.as_uri(), path, _build(path.as_uri(), work))


@pytest.fixture(scope="session")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> MlflowStore:
    require_component(
        importlib.util.find_spec("sqlalchemy"), "sqlalchemy", "pip install 'ledger-repro[mlflow]'"
    )
    work = tmp_path_factory.mktemp("mlflow-sqlite")
    path = work / "mlflow.db"
    uri = f"sqlite:///{path}"
    return MlflowStore(uri, path, _build(uri, work))
