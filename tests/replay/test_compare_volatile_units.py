"""A timing word followed by a unit is a timing even with nothing before it
(ledger/replay/compare/volatile.py): "time_ms", "seconds_s", as a logger names them; and the
line a replay prints names eight of them by default."""

from __future__ import annotations

import pytest

from ledger.replay.compare.volatile import not_compared_text, volatile_reason


@pytest.mark.parametrize("name", ["time_ms", "seconds_s", "secs/min", "Time-US"])
def test_a_timing_word_and_its_unit_alone(name: str) -> None:
    assert volatile_reason(name) == "timing"


def test_a_replay_names_eight_timings_and_counts_the_rest() -> None:
    """The default of the "not compared" line a replay prints: eight names, then a count."""
    nine = {f"step{i}_time_ms": "timing" for i in range(9)}
    text = not_compared_text(nine)
    assert text.endswith("step7_time_ms and 1 more (timing)"), text
    assert "step8_time_ms" not in text
