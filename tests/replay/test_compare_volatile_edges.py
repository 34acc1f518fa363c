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


def test_the_longest_root_wins_whatever_order_the_roots_come_in() -> None:
    """A working directory below the root, given as a pair of its own after the root's: a path
    under it maps to its own pair, not to the root's with the rest of the path kept."""
    m = PathMap.of([(["/home/u/proj"], ["/tmp/ws"]), (["/home/u/proj/sub"], ["/tmp/sub"])])
    assert m.same("/home/u/proj/sub/a.ckpt", "/tmp/sub/a.ckpt")
    assert not m.same("/home/u/proj/sub/a.ckpt", "/tmp/ws/sub/a.ckpt")


def test_a_short_ledger_path_inside_the_working_tree_is_kept() -> None:
    """The ledger at /w/db inside a working tree at /w: its paths are the same place for both
    runs, however short they are beside the token a root maps to."""
    m = PathMap.of([(["/w"], ["/tmp/ws"])], keep=["/w/db"])
    assert m.canonical("/w/db/objects/ab", "original") == "/w/db/objects/ab"
    assert m.same("/w/db/objects/ab", "/w/db/objects/ab")
    assert not m.same("/w/db/objects/ab", "/tmp/ws/db/objects/ab")


def test_a_kept_path_is_not_the_replays_workspace() -> None:
    """A file under the original's ledger is not the replay's workspace file of the same name:
    the ledger is left as written, only the working tree maps."""
    m = PathMap.of([(["/home/u/proj"], ["/tmp/ws"])], keep=["/home/u/proj/.ledger"])
    assert m.canonical("/home/u/proj/.ledger/x", "original") == "/home/u/proj/.ledger/x"
    assert not m.same("/home/u/proj/.ledger/x", "/tmp/ws/x")


def test_a_map_without_roots_or_kept_paths_leaves_text_as_written() -> None:
    assert PathMap().canonical("/home/u/proj/x", "original") == "/home/u/proj/x"
    assert PathMap.of([]).canonical("saved /a/b", "replay") == "saved /a/b"


def test_describe_names_each_root_as_written_not_resolved() -> None:
    """/tmp is a link on macOS: each root comes as written and resolved; the note a verdict
    prints names the spelling the run used."""
    m = PathMap.of([(["/tmp/proj", "/private/tmp/proj"], ["/tmp/ws", "/private/tmp/ws"])])
    assert m.describe() == "paths under /tmp/proj read as under the replay's /tmp/ws"
