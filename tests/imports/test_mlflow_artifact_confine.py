"""``ledger import mlflow`` reads a local store's artifacts only from inside the store (issue 36,
point 6): a run's ``meta.yaml`` can name any folder as its ``artifact_uri`` (``file:///home/u/.ssh``),
and its artifacts folder can be a symlink out of the store; neither may bring the files there
into the ledger. The store is a real MLflow file store written by MLflow's own client; the
attacks edit it as anyone who hands over a store can."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, require_component, run_ledger

from ledger.run.find import load_run
from ledger.store import Store

KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nvictim-key-b3Jx9Qw2Lp7Zt4\n"

BUILD = """
import json, os, sys
from pathlib import Path
os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
from mlflow.tracking import MlflowClient
store, work = Path(sys.argv[1]), Path(sys.argv[2])
client = MlflowClient(tracking_uri=store.as_uri())
exp = client.create_experiment("exp")
(work / "result.txt").write_text("kept artifact\\n")
ids = {}
for i, name in enumerate(["uri-outside", "folder-link", "file-link", "hidden", "plain"]):
    run = client.create_run(exp, start_time=1_790_000_000_000 + i * 1000, run_name=name)
    client.log_artifact(run.info.run_id, str(work / "result.txt"))
    client.set_terminated(run.info.run_id, "FINISHED", end_time=1_790_000_000_500 + i * 1000)
    ids[name] = [run.info.run_id, exp]
print(json.dumps(ids))
"""


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    require_component(
        importlib.util.find_spec("mlflow"), "mlflow", "pip install 'ledger-repro[mlflow]'"
    )
    work = tmp_path_factory.mktemp("mlflow-confine")
    store = work / "mlruns"
    r = subprocess.run(
        [sys.executable, "-c", BUILD, str(store), str(work)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    ids = json.loads(r.stdout.strip().splitlines()[-1])
    victim = work / "home" / ".ssh"  # outside the store
    victim.mkdir(parents=True)
    (victim / "id_ed25519").write_bytes(KEY)

    def run_dir(name: str) -> Path:
        run_id, exp = ids[name]
        return store / exp / run_id

    # 1. meta.yaml names a folder outside the store
    meta = run_dir("uri-outside") / "meta.yaml"
    lines = meta.read_text().splitlines()
    lines = [
        f"artifact_uri: {victim.as_uri()}" if x.startswith("artifact_uri:") else x for x in lines
    ]
    meta.write_text("\n".join(lines) + "\n")
    # 2. the run's artifacts folder is a symlink out of the store
    art = run_dir("folder-link") / "artifacts"
    (art / "result.txt").unlink()
    art.rmdir()
    art.symlink_to(victim)
    # 3. a symlink among the artifacts to a file outside
    (run_dir("file-link") / "artifacts" / "id_ed25519").symlink_to(victim / "id_ed25519")
    # 4. a hidden folder inside the store (a copy of the keys in the run's own folder)
    hidden = run_dir("hidden") / ".ssh"
    hidden.mkdir()
    (hidden / "id_ed25519").write_bytes(KEY)
    meta = run_dir("hidden") / "meta.yaml"
    lines = meta.read_text().splitlines()
    lines = [
        f"artifact_uri: {hidden.as_uri()}" if x.startswith("artifact_uri:") else x for x in lines
    ]
    meta.write_text("\n".join(lines) + "\n")

    ledger = work / "proj"
    ledger.mkdir()
    init_ledger(ledger)
    out: dict[str, str] = {}
    notes = []
    # The first attack alone, then the rest at once: one refusal must not hide another.
    first = ["--run-id", ids["uri-outside"][0]]
    rest = [
        a
        for name, (run_id, _) in ids.items()
        if name != "uri-outside"
        for a in ("--run-id", run_id)
    ]
    for args in (first, rest):
        r = run_ledger("import", "mlflow", str(store), *args, "--json", cwd=ledger)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        out |= {i["name"]: i["run_id"] for i in report["imported"]}
        notes += report["notes"]
    return ledger, work, out | {"_notes": "\n".join(notes)}


def _stored(ledger: Path) -> list[bytes]:
    store = Store.open(ledger / ".ledger")
    return [store.objects.get_bytes(oid) for oid in store.objects]


def test_no_file_outside_the_store_reaches_the_ledger(
    attacked: tuple[Path, Path, dict[str, str]],
) -> None:
    ledger, _, _ = attacked
    assert not [data for data in _stored(ledger) if b"victim-key-b3Jx9Qw2Lp7Zt4" in data]


@pytest.mark.parametrize("name", ["uri-outside", "folder-link", "hidden"])
def test_the_run_is_imported_without_artifacts_and_says_why(
    attacked: tuple[Path, Path, dict[str, str]], name: str
) -> None:
    ledger, _, ids = attacked
    _, run = load_run(Store.open(ledger / ".ledger"), ids[name])
    assert run.outputs == []
    notes = "\n".join(run.notes)
    assert "artifacts not imported: the run's artifact_uri" in notes
    why = "in the hidden folder .ssh" if name == "hidden" else "outside the store's folder"
    assert why in notes
    assert "artifacts not imported" in ids["_notes"]  # the import says it too


def test_artifacts_inside_the_store_are_imported_and_links_are_never_followed(
    attacked: tuple[Path, Path, dict[str, str]],
) -> None:
    ledger, _, ids = attacked
    store = Store.open(ledger / ".ledger")
    for name in ("plain", "file-link"):
        _, run = load_run(store, ids[name])
        (out,) = run.outputs
        assert out.tree is not None
        assert "result.txt" in json.dumps(store.get_json(out.tree))
        assert out.files == 1  # the link out of the folder is left out, never read


def test_a_fifo_among_the_artifacts_is_left_out_without_blocking(tmp_path: Path) -> None:
    import os

    from ledger.imports.mlflow_read import _copy_local_artifacts

    store = tmp_path / "mlruns"
    art = store / "1" / "abc" / "artifacts"
    (art / "model").mkdir(parents=True)
    (art / "model" / "w.bin").write_bytes(b"weights")
    os.mkfifo(art / "pipe")  # a reader would wait forever for a writer
    dest = tmp_path / "copy"
    copied, why = _copy_local_artifacts(art.as_uri(), store, dest)
    assert (copied, why) == (dest, None)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "model",
        "model/w.bin",
    ]
    # a relative artifact_uri is taken from the store's folder, and checked the same way
    copied, why = _copy_local_artifacts("../home", store, tmp_path / "copy2")
    assert copied is None and why is not None and "outside the store's folder" in why
