"""A timing word followed by a unit is a timing even with nothing before it
(ledger/replay/compare/volatile.py): "time_ms", "seconds_s", as a logger names them."""

from __future__ import annotations

import pytest

from ledger.replay.compare.volatile import volatile_reason


@pytest.mark.parametrize("name", ["time_ms", "seconds_s", "secs/min", "Time-US"])
def test_a_timing_word_and_its_unit_alone(name: str) -> None:
    assert volatile_reason(name) == "timing"
