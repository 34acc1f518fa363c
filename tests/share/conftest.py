"""A real ledger with one recorded run in a real git repository, packaged once per module."""

from __future__ import annotations

from pathlib import Path

import pytest
from _share_lab import make_repo, record
from _support import run_ledger


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
