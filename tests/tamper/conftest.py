from __future__ import annotations

from pathlib import Path

import pytest
from _sealed import build_sealed_project, copy_project


@pytest.fixture(scope="session")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("sealed") / "proj"
    return repo, build_sealed_project(repo)


@pytest.fixture
def project(sealed: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    """A fresh copy of the sealed project, to damage."""
    return copy_project(sealed[0], tmp_path / "proj")
