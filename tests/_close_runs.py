"""An autouse fixture, taken into the conftest.py of each folder whose tests make ``Run``
objects: every ``Run`` a test makes is closed when the test ends. An open run keeps its
metrics writer thread, which opens the run's metrics file on its next flush, during whatever
test the worker runs next (one that counts its process's descriptors failed so)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ledger.runtime.run import Run


@pytest.fixture(autouse=True)
def _close_the_runs_a_test_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    made: list[Run] = []
    init = Run.__init__

    def tracked(self: Run, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Run, "__init__", tracked)
    yield
    for run in made:
        run.close()
