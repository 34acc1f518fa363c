from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _read_project import build


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("read") / "proj"
    return repo, build(repo)


@pytest.fixture
def proj(built: tuple[Path, dict[str, str]], tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh copy of the built project, to curate or damage."""
    dest = tmp_path / "proj"
    shutil.copytree(built[0], dest, symlinks=True)
    return dest, built[1]
