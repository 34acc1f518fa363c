from __future__ import annotations

from pathlib import Path

import pytest

from ledger.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")
