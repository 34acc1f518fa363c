"""Fixtures for audit tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from _audit_lab import Lab

from ledger.store import Store


@pytest.fixture
def lab(store: Store, tmp_path: Path) -> Lab:
    return Lab(store, tmp_path)
