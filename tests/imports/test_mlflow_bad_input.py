"""`ledger import mlflow` on bad input: a clear `ledger: error` + hint, exit 2, nothing written
to the ledger (its log stays as it was and `ledger verify` passes) and nothing written to the
source either (MLflow's client creates a store where it finds none)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest
from _mlflow_store import MlflowStore
from _support import REPO, new_project, run_ledger


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_project(tmp_path / "repo")


def _tree(root: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes() if p.is_file() else b"")
        for p in root.rglob("*")
    )


def _refused(repo: Path, *args: str, says: str) -> str:
    r = run_ledger("import", *args, cwd=repo)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("ledger: error: ") and says in lines[0], r.stderr
    assert any(line.startswith("ledger: hint: ") for line in lines), r.stderr
    assert "Traceback" not in r.stderr
    assert not (repo / ".ledger" / "log" / "chain.jsonl").exists()  # nothing imported
    assert not list((repo / ".ledger" / "refs").rglob("*"))
    v = run_ledger("verify", cwd=repo)
    assert v.returncode == 0, v.stdout + v.stderr
    return lines[0]


def test_a_folder_that_is_not_a_store_is_refused_and_left_as_it_was(
    repo: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "not-mlruns"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("hello\n")
    before = _tree(folder)
    _refused(repo, "mlflow", str(folder), says="is not an MLflow store")
    _refused(repo, "mlflow", folder.as_uri(), says="is not an MLflow store")
    assert _tree(folder) == before  # no .trash/, no 0/ created by MLflow's client


def test_missing_paths_and_plain_files_are_refused(repo: Path, tmp_path: Path) -> None:
    _refused(repo, "mlflow", str(tmp_path / "nowhere"), says="no such folder")
    text = tmp_path / "runs.csv"
    text.write_text("a,b\n")
    _refused(repo, "mlflow", str(text), says="not an SQLite database")


def test_a_database_that_is_not_mlflow_is_refused_and_not_migrated(
    repo: Path, tmp_path: Path
) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = db.read_bytes()
    _refused(repo, "mlflow", f"sqlite:///{db}", says="no MLflow experiments and runs tables")
    _refused(repo, "mlflow", str(db), says="no MLflow experiments and runs tables")
    assert db.read_bytes() == before
    missing = tmp_path / "missing.db"
    _refused(repo, "mlflow", f"sqlite:///{missing}", says="no such database file")
    assert not missing.exists()


def test_an_unreachable_tracking_server_fails_fast(repo: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = _refused(repo, "mlflow", f"http://user:pw@127.0.0.1:{port}", says="cannot read MLflow")
    assert "pw@" not in line  # credentials are not echoed


def _copy(store: MlflowStore, tmp_path: Path) -> Path:
    copy = tmp_path / "mlruns"
    shutil.copytree(store.path, copy)
    return copy


def test_a_corrupt_run_meta_yaml_stops_the_whole_import(
    repo: Path, file_store: MlflowStore, tmp_path: Path
) -> None:
    copy = _copy(file_store, tmp_path)
    (meta,) = copy.glob(f"*/{file_store.ids['stopped']}/meta.yaml")
    meta.write_text("run_id: [unclosed\n  status: {{\n")
    line = _refused(repo, "mlflow", str(copy), says="the MLflow store is damaged")
    assert str(meta) in line
    # outside the damaged experiment, the rest imports
    r = run_ledger("import", "mlflow", str(copy), "--experiment", "exp-b", cwd=repo)
    assert r.returncode == 0 and "imported" in r.stdout, r.stderr


def test_an_experiment_meta_yaml_without_its_name_is_refused(
    repo: Path, file_store: MlflowStore, tmp_path: Path
) -> None:
    copy = _copy(file_store, tmp_path)
    metas = [m for m in copy.glob("*/meta.yaml") if "exp-b" in m.read_text()]
    (meta,) = metas
    meta.write_text("experiment_id: '7'\nlifecycle_stage: active\n")
    line = _refused(repo, "mlflow", str(copy), says="lacks name")
    assert str(meta) in line


def test_an_unknown_experiment_or_run_is_refused(repo: Path, file_store: MlflowStore) -> None:
    line = _refused(repo, "mlflow", str(file_store.path), "--experiment", "nope", says="nope")
    assert "no MLflow experiment" in line
    _refused(repo, "mlflow", str(file_store.path), "--run-id", "f" * 32, says="no MLflow run")
    _refused(
        repo, "mlflow", str(file_store.path), "--experiment", "exp-b",
        "--run-id", file_store.ids["baseline"], says="is in experiment 'exp-a'",
    )  # fmt: skip


def test_mlflow_options_and_argument_counts_are_checked(repo: Path, tmp_path: Path) -> None:
    _refused(repo, "pkg.ledgerpkg", "--dry-run", says="apply to `ledger import mlflow` only")
    _refused(repo, "mlflow", "a", "b", says="got 3 arguments")


def test_without_the_mlflow_client_the_hint_names_the_extra(
    repo: Path, file_store: MlflowStore, tmp_path: Path
) -> None:
    fake = tmp_path / "no-mlflow"
    (fake / "mlflow").mkdir(parents=True)
    (fake / "mlflow" / "__init__.py").write_text("raise ImportError('not installed')\n")
    r = run_ledger(
        "import", "mlflow", str(file_store.path), cwd=repo,
        PYTHONPATH=os.pathsep.join([str(fake), str(REPO)]),
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("ledger: error: MLflow is not installed"), r.stderr
    assert "ledger-repro[mlflow]" in r.stderr
    assert not (repo / ".ledger" / "log" / "chain.jsonl").exists()
