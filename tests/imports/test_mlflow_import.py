"""`ledger import mlflow`: real MLflow stores (file and sqlite) written by MLflow's own client,
imported by the real CLI in a child process, read back from the ledger's objects."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _mlflow_lab import LOSS, T0
from _mlflow_store import MlflowStore
from _support import init_ledger, run_ledger

from ledger._hashing import hash_bytes
from ledger.imports.mlflow_import import ledger_run_id
from ledger.records.base import record_from_json
from ledger.records.run import Run
from ledger.store import Store


def _new_ledger(root: Path) -> Path:
    root.mkdir()
    init_ledger(root)
    return root


def _import(repo: Path, *args: str) -> dict[str, object]:
    r = run_ledger("import", "mlflow", *args, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def _run(repo: Path, run_id: str) -> Run:
    store = Store.open(repo / ".ledger")
    oid = store.refs.get(f"runs/{run_id}")
    assert oid is not None
    run = record_from_json(store.get_json(oid), Run)
    assert isinstance(run, Run)
    return run


def _log(repo: Path) -> bytes:
    path = repo / ".ledger" / "log" / "chain.jsonl"
    return path.read_bytes() if path.exists() else b""


@pytest.fixture(scope="module")
def imported(file_store: MlflowStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = _new_ledger(tmp_path_factory.mktemp("team") / "repo")
    report = _import(repo, str(file_store.path))
    names = sorted(str(r["name"]) for r in report["imported"])  # type: ignore[attr-defined]
    assert names == ["baseline", "crashed", "live", "stopped"]  # the deleted run stays behind
    # the run from a clock ahead waits: a log line may not be older than its record
    (note,) = report["notes"]  # type: ignore[misc]
    assert file_store.ids["future"] in note and "ahead of this machine's clock" in note
    return repo


def _id(store: MlflowStore, name: str) -> str:
    starts = {"baseline": T0, "crashed": T0 + 60_000, "stopped": T0 + 120_000}
    starts["live"] = T0 + 240_000
    return ledger_run_id(store.ids[name], starts[name])


def test_every_field_of_a_finished_run_lands_in_a_sealed_imported_record(
    imported: Path, file_store: MlflowStore
) -> None:
    run = _run(imported, _id(file_store, "baseline"))
    assert run.schema_version == 2 and run.contract is None and run.status == "succeeded"
    assert run.name == "baseline" and run.tags == {"team": "vision"}
    assert run.started.timestamp() == T0 / 1000 and run.wall_seconds == 6.0
    origin = run.imported
    assert origin is not None and origin.source == "mlflow"
    assert origin.run_id == file_store.ids["baseline"] and origin.experiment == "exp-a"
    assert origin.tracking_uri == file_store.path.as_uri() and origin.status == "FINISHED"
    # the commit is provenance, kept as MLflow was told, not a code snapshot
    assert origin.git_commit == "0123456789abcdef0123456789abcdef01234567"
    assert origin.tags["mlflow.runName"] == "baseline"
    # params: typed in the resolved config, verbatim under imported; secrets redacted in both
    assert origin.params["lr"] == "0.01" and origin.params["use_amp"] == "True"
    store = Store.open(imported / ".ledger")
    assert run.resolved_config is not None
    resolved = store.get_json(run.resolved_config)["resolved"]
    assert resolved["lr"] == 0.01 and resolved["model.depth"] == 3
    assert resolved["optimizer"] == "adam" and resolved["use_amp"] is True
    assert "hunter2" not in json.dumps(resolved) + json.dumps(origin.params)
    # every metric point, its step and its time since the start
    series = {m.name: store.get_json(m.series) for m in run.metrics}
    assert series["loss"]["value"] == LOSS and series["loss"]["step"] == [0, 10, 20, 30, 40]
    assert series["loss"]["wall"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert series["accuracy"]["step"] == [0, 40] and series["accuracy"]["wall"] == [1.5, 4.5]
    assert {m.source for m in run.metrics} == {"api"}
    # artifacts: one output tree whose entries are the files' own BLAKE3 ids
    (out,) = run.outputs
    assert out.path == "mlflow-artifacts" and out.files == 2 and out.tree is not None
    entries = {e["path"]: e["oid"] for e in store.get_json(out.tree)["entries"]}
    assert entries == {
        "notes.txt": hash_bytes(b"baseline run\n"),
        "model/weights.bin": hash_bytes(bytes(range(256)) * 4),
    }
    assert store.objects.get_bytes(entries["notes.txt"]) == b"baseline run\n"


def test_statuses_map_and_a_running_run_is_marked(imported: Path, file_store: MlflowStore) -> None:
    crashed = _run(imported, _id(file_store, "crashed"))
    assert crashed.status == "failed" and crashed.outputs == []
    loss = crashed.metrics[0]
    assert loss.count == 2 and loss.nonfinite_count == 1 and loss.first_nonfinite_step == 1
    assert _run(imported, _id(file_store, "stopped")).status == "killed"
    live = _run(imported, _id(file_store, "live"))
    assert live.status == "interrupted" and live.ended is None
    assert live.imported is not None and live.imported.status == "RUNNING"
    assert any("RUNNING" in n for n in live.notes)


def test_ls_show_diff_and_verify_work_on_imported_runs(
    imported: Path, file_store: MlflowStore
) -> None:
    r = run_ledger(
        "ls", "--where", "params.lr<0.05", "--columns", "name,params.lr,metrics.loss.last",
        "--json", cwd=imported,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert sorted(row["name"] for row in rows) == ["baseline", "stopped"]
    base = next(row for row in rows if row["name"] == "baseline")
    assert base["columns"] == {"name": "baseline", "params.lr": 0.01, "metrics.loss.last": 0.375}

    base_id, stopped_id = _id(file_store, "baseline"), _id(file_store, "stopped")
    r = run_ledger("show", base_id, cwd=imported)
    assert r.returncode == 0, r.stderr
    assert "imported  from mlflow" in r.stdout and file_store.ids["baseline"] in r.stdout
    assert "mlflow-artifacts  2 files" in r.stdout

    r = run_ledger("diff", base_id, stopped_id, "--json", cwd=imported)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"key": "lr", "a": 0.01, "b": 0.001} in d["config"]
    assert d["code"] is None and sorted(d["imported"]) == sorted([base_id, stopped_id])
    r = run_ledger("diff", base_id, stopped_id, cwd=imported)
    assert r.returncode == 0 and "was imported (no contract)" in r.stdout, r.stderr

    r = run_ledger("verify", cwd=imported)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cannot be replayed" in r.stdout + r.stderr
    assert "unreplayable" not in r.stdout + r.stderr


def test_replay_refuses_an_imported_run_with_exit_7(
    imported: Path, file_store: MlflowStore
) -> None:
    before = _log(imported)
    r = run_ledger("replay", _id(file_store, "baseline"), cwd=imported)
    assert r.returncode == 7, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("ledger: error: ") and "imported from mlflow" in lines[0]
    assert "not replayable" in lines[0] and lines[1].startswith("ledger: hint: ")
    assert "Traceback" not in r.stderr and _log(imported) == before


def test_an_audit_claim_reads_imported_metrics(imported: Path, tmp_path: Path) -> None:
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - id: baseline-loss\n"
        "    metric: loss\n"
        "    higher_is_better: false\n"
        "    value: 0.375\n"
        "    n_seeds: 1\n"
        "    runs: {names: [baseline]}\n"
    )
    r = run_ledger("audit", str(claims), "--json", cwd=imported)
    assert "Traceback" not in r.stderr, r.stderr
    (claim,) = json.loads(r.stdout)["record"]["claims"]
    (run,) = claim["runs"]
    assert (run["name"], run["value"], run["step"], run["used"]) == ("baseline", 0.375, 40, True)


def test_importing_again_adds_nothing(imported: Path, file_store: MlflowStore) -> None:
    before = _log(imported)
    report = _import(imported, file_store.uri)  # the same store, named by its file: URI
    assert report["imported"] == [] and len(report["already_imported"]) == 4  # type: ignore[arg-type]
    assert _log(imported) == before
    base = next(r for r in report["already_imported"] if r["name"] == "baseline")  # type: ignore[attr-defined]
    assert (base["metrics"], base["points"], base["artifacts"]) == (2, 7, 2)
    assert base["record"] == Store.open(imported / ".ledger").refs.get(f"runs/{base['run_id']}")
    r = run_ledger("import", "mlflow", str(file_store.path), cwd=imported)
    assert r.returncode == 0 and "already imported" in r.stdout, r.stderr


def test_sqlite_store_gives_the_same_histories(
    sqlite_store: MlflowStore, file_store: MlflowStore, imported: Path, tmp_path: Path
) -> None:
    repo = _new_ledger(tmp_path / "repo")
    report = _import(repo, sqlite_store.uri, "--experiment", "exp-a")
    assert sorted(str(r["name"]) for r in report["imported"]) == [  # type: ignore[attr-defined]
        "baseline", "crashed", "stopped",
    ]  # fmt: skip
    a = _run(repo, _id(sqlite_store, "baseline"))
    b = _run(imported, _id(file_store, "baseline"))
    sa, sb = Store.open(repo / ".ledger"), Store.open(imported / ".ledger")
    assert [sa.get_json(m.series) for m in a.metrics] == [sb.get_json(m.series) for m in b.metrics]
    assert a.outputs[0].tree == b.outputs[0].tree  # same artifacts, same tree id
    assert a.imported is not None and a.imported.tracking_uri == sqlite_store.uri
    # a database file given by path is opened as sqlite:///
    report = _import(repo, str(sqlite_store.path), "--run-id", sqlite_store.ids["live"])
    assert [r["name"] for r in report["imported"]] == ["live"]  # type: ignore[attr-defined]
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_dry_run_lists_and_writes_nothing(file_store: MlflowStore, tmp_path: Path) -> None:
    repo = _new_ledger(tmp_path / "repo")
    report = _import(repo, str(file_store.path), "--dry-run", "--experiment", "exp-b")
    assert report["dry_run"] is True
    assert [r["name"] for r in report["imported"]] == ["live"]  # type: ignore[attr-defined]
    assert _log(repo) == b"" and not list((repo / ".ledger" / "refs").rglob("*"))
    assert not any((repo / ".ledger" / "objects").rglob("*/*"))


def test_nan_params_and_step_order_do_not_break_sealing() -> None:
    from ledger.imports.mlflow_import import param_value

    assert param_value("1e-3") == 0.001 and param_value("-7") == -7
    assert math.isnan(param_value("nan")) and param_value("None") is None
    assert param_value("0x10") == "0x10" and param_value("[1, 2]") == "[1, 2]"


def test_an_imported_run_travels_in_a_package_and_is_not_attested(
    imported: Path, file_store: MlflowStore, tmp_path: Path
) -> None:
    base = _id(file_store, "baseline")
    pkg = tmp_path / "history.ledgerpkg"
    r = run_ledger("export", base, "-o", str(pkg), cwd=imported)
    assert r.returncode == 0, r.stderr
    other = _new_ledger(tmp_path / "other")
    r = run_ledger("import", str(pkg), cwd=other)
    assert r.returncode == 0, r.stderr
    assert _run(other, base) == _run(imported, base)
    assert run_ledger("verify", cwd=other).returncode == 0
    key = tmp_path / "key.pem"
    assert run_ledger("keygen", str(key), cwd=other).returncode == 0
    r = run_ledger("attest", base, "--key", str(key), cwd=other)
    assert r.returncode == 2 and "no contract" in r.stderr, r.stderr
