"""Replay of a run recorded with --no-store-inputs whose input DVC tracks: the data comes back
from the recorded repository's DVC cache and its BLAKE3 digest is checked; when DVC's cache
lacks it, the error says to `dvc pull`. Real git and DVC repositories throughout."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.capture.dvcinfo import restore_from_dvc
from ledger.records.contract import Contract
from ledger.records.data import InputDigest
from ledger.run.find import load_run
from ledger.store import Store

pytestmark = [
    pytest.mark.dvc,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

TRAIN = """
import hashlib, pathlib, sys
data = pathlib.Path(sys.argv[1])
h = hashlib.sha256()
for p in sorted(data.rglob("*")):
    if p.is_file():
        h.update(p.relative_to(data).as_posix().encode() + p.read_bytes())
print(f"epoch 0 loss {int(h.hexdigest()[:8], 16) / 2**32!r}")
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }


def _run(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, env=_env(), check=True, capture_output=True, timeout=120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "a.csv").write_text("x,y\n1,2\n")
    (root / "data" / "sub" / "b.bin").write_bytes(bytes(range(256)) * 3)
    (root / "labels.txt").write_text("cat\ndog\n")
    (root / "train.py").write_text(TRAIN)
    _run(["git", "init", "-q"], root)
    _run([sys.executable, "-m", "dvc", "init", "-q"], root)
    _run([sys.executable, "-m", "dvc", "add", "-q", "data", "labels.txt"], root)
    (root / ".gitignore").write_text(".ledger/\n")
    _run(["git", "add", "-A"], root)
    _run(["git", "commit", "-qm", "data under DVC"], root)
    init_ledger(root)
    return root


def _record(repo: Path) -> str:
    r = run_ledger(
        "record",
        "--no-store-inputs",
        "--input",
        "data",
        "--input",
        "labels.txt",
        "--metric",
        METRIC,
        "--json",
        "--",
        sys.executable,
        "train.py",
        "data",
        cwd=repo,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(repo: Path, run_id: str) -> tuple[int, dict[str, object], str]:
    r = run_ledger("replay", run_id, "--json", cwd=repo)
    start = r.stdout.find("{\n")
    return r.returncode, (json.loads(r.stdout[start:]) if start >= 0 else {}), r.stderr


def _inputs(repo: Path, run_id: str) -> dict[str, InputDigest]:
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    contract = Contract.model_validate(store.get_json(run.contract))
    digests = [InputDigest.model_validate(i) for i in contract.inputs]
    return {d.path: d for d in digests}


def _dvc_cache_files(repo: Path) -> list[Path]:
    return [p for p in (repo / ".dvc" / "cache").rglob("*") if p.is_file()]


@pytest.mark.slow
def test_no_store_inputs_run_replays_from_the_dvc_cache(repo: Path) -> None:
    run_id = _record(repo)
    inputs = _inputs(repo, run_id)
    store = Store.open(repo / ".ledger")
    data = inputs["data"]
    assert data.dvc is not None and data.dvc.matches
    # The content was not stored, but the manifest the record names was.
    assert data.files is not None and store.objects.has(data.files)
    assert not any(store.objects.has(e["digest"]) for e in store.get_json(data.files)["entries"])
    code, verdict, err = _replay(repo, run_id)
    assert code == 0, err
    assert verdict["outcome"] == "reproduced"
    notes = " ".join(str(n) for n in verdict.get("notes", []))  # type: ignore[attr-defined]
    assert "input data restored from the DVC cache" in notes
    assert "input labels.txt restored from the DVC cache" in notes


@pytest.mark.slow
def test_data_missing_from_the_dvc_cache_says_dvc_pull(repo: Path) -> None:
    run_id = _record(repo)
    for p in _dvc_cache_files(repo):
        os.chmod(p, stat.S_IWUSR | stat.S_IRUSR)
        p.unlink()
    code, _, err = _replay(repo, run_id)
    assert code == 7, err
    assert "is not in the DVC cache" in err and "dvc pull" in err
    assert "data.dvc" in err


@pytest.mark.slow
def test_a_dvc_cache_that_no_longer_holds_the_recorded_bytes_fails_the_digest(
    repo: Path,
) -> None:
    run_id = _record(repo)
    inputs = _inputs(repo, run_id)
    info = inputs["labels.txt"].dvc
    assert info is not None
    (cached,) = [p for p in _dvc_cache_files(repo) if p.name == info.workspace_md5[2:]]
    os.chmod(cached, stat.S_IWUSR | stat.S_IRUSR)
    cached.write_text("cow\ndog\n")  # same size, other bytes: DVC would not notice
    code, _, err = _replay(repo, run_id)
    assert code == 7, err
    assert "restored input labels.txt has digest" in err


def test_restore_from_dvc_writes_private_copies(repo: Path, tmp_path: Path) -> None:
    from ledger.capture.data import digest_input
    from ledger.capture.statcache import StatCache

    d = digest_input(repo / "data", StatCache())
    assert d.dvc is not None
    out = tmp_path / "restored"
    assert restore_from_dvc(d.dvc, "dir", out) == 2
    assert (out / "sub" / "b.bin").read_bytes() == bytes(range(256)) * 3
    assert digest_input(out, StatCache(), dvc=False).digest == d.digest
    # Writing the copy must never write through into DVC's cache.
    (out / "a.csv").write_text("changed")
    assert (repo / "data" / "a.csv").read_text() == "x,y\n1,2\n"
    assert all(p.read_bytes() != b"changed" for p in _dvc_cache_files(repo))


def test_restore_from_a_vanished_repository_is_a_missing_object(repo: Path, tmp_path: Path) -> None:
    from ledger.capture.data import digest_input
    from ledger.capture.statcache import StatCache
    from ledger.errors import MissingObjectError

    d = digest_input(repo / "labels.txt", StatCache())
    assert d.dvc is not None
    shutil.rmtree(repo / ".dvc")
    with pytest.raises(MissingObjectError, match="is gone"):
        restore_from_dvc(d.dvc, "file", tmp_path / "labels.txt")


@pytest.mark.slow
def test_data_missing_from_the_store_and_cache_is_fetched_from_the_dvc_remote(
    repo: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "dvc-remote"
    _run([sys.executable, "-m", "dvc", "remote", "add", "-d", "store", str(remote)], repo)
    _run([sys.executable, "-m", "dvc", "push", "-q"], repo)
    run_id = _record(repo)
    for p in _dvc_cache_files(repo):
        os.chmod(p, stat.S_IWUSR | stat.S_IRUSR)
        p.unlink()
    code, verdict, err = _replay(repo, run_id)
    assert code == 0, err
    assert verdict["outcome"] == "reproduced"
    notes = " ".join(str(n) for n in verdict.get("notes", []))  # type: ignore[attr-defined]
    assert f"input data restored from DVC remote store ({remote})" in notes
    assert "BLAKE3 digest verified" in notes


@pytest.mark.slow
def test_a_dvc_remote_without_the_data_still_says_dvc_pull(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "empty-remote"
    remote.mkdir()
    _run([sys.executable, "-m", "dvc", "remote", "add", "-d", "store", str(remote)], repo)
    run_id = _record(repo)
    for p in _dvc_cache_files(repo):
        os.chmod(p, stat.S_IWUSR | stat.S_IRUSR)
        p.unlink()
    code, _, err = _replay(repo, run_id)
    assert code == 7, err
    assert (
        "is not in the DVC cache" in err and f"fetching it from DVC remote store ({remote})" in err
    )
    assert "did not bring it" in err
