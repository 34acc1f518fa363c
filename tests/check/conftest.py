from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def models_dir(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Specs name ``gate_models:<fn>``; they are imported relative to the working folder (the
    checkpoint-recovery children inherit it)."""
    monkeypatch.chdir(HERE)
    return HERE
