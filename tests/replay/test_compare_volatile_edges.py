"""Edges of what a replay cannot keep equal (ledger/replay/compare/volatile.py): a timing word
followed by a unit with nothing before it ("time_ms"), the line a replay prints naming eight
timings by default, a working tree at "/" (a container's), and the path map shared as is."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.replay.compare.volatile import PathMap, not_compared_text, volatile_reason


@pytest.mark.parametrize("name", ["time_ms", "seconds_s", "secs/min", "Time-US"])
def test_a_timing_word_and_its_unit_alone(name: str) -> None:
    assert volatile_reason(name) == "timing"


def test_a_replay_names_eight_timings_and_counts_the_rest() -> None:
    """The default of the "not compared" line a replay prints: eight names, then a count."""
    nine = {f"step{i}_time_ms": "timing" for i in range(9)}
    text = not_compared_text(nine)
    assert text.endswith("step7_time_ms and 1 more (timing)"), text
    assert "step8_time_ms" not in text


def test_a_working_tree_at_the_filesystem_root_maps_nothing() -> None:
    """A run recorded in a container whose working directory is "/": that root would map every
    absolute path, so it is dropped with its pair (a pair with one side only is no mapping),
    and paths are compared as written."""
    m = PathMap.of([(["/"], ["/data"])])
    assert m.roots == ()
    assert not m.same("/train.csv", "/data/train.csv")


def test_the_path_map_cannot_be_changed_once_made() -> None:
    m = PathMap.of([(["/home/u/proj"], ["/tmp/ws/code"])])
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.roots = ()  # type: ignore[misc]
