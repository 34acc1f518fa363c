"""The comparators' shared pieces (``ledger.replay.compare._common``): tolerance lookup, relative
differences, value reprs and the value tally. Pinned because mutation testing (issue #18) found
their edges untested: the repr limit, a relative difference against 0, inf or NaN, a dtype
ledger.stats does not know, a structural difference with both a key and a line."""

from __future__ import annotations

import math

import pytest

from ledger.records.verdict_parts import CompareSettings
from ledger.replay.compare._common import (
    NotComparable,
    ValueTally,
    relative,
    short_repr,
    tolerance_for,
)
from ledger.stats import EXACT, Tolerance, default_tolerance


def test_not_comparable_carries_its_reason_as_its_message() -> None:
    e = NotComparable("the file is not UTF-8")
    assert e.reason == "the file is not UTF-8"
    assert str(e) == "the file is not UTF-8"
    assert e.args == ("the file is not UTF-8",)


def test_short_repr_keeps_200_characters_and_cuts_longer_ones_to_200() -> None:
    exactly = "a" * 198  # its repr, with the quotes, is 200 characters
    assert short_repr(exactly) == repr(exactly)
    longer = "b" * 199  # 201
    cut = short_repr(longer)
    assert len(cut) == 200
    assert cut == repr(longer)[:197] + "..."


def test_relative_difference_edges() -> None:
    assert relative(0.5, 2.0) == 0.25
    assert relative(0.5, -2.0) == 0.25
    assert relative(1.0, 1.0) == 1.0
    assert math.isnan(relative(math.nan, 1.0))
    # against 0, inf or NaN: 0 when the values are equal, infinite when they differ
    for original in (0.0, math.inf, -math.inf, math.nan):
        assert relative(0.0, original) == 0.0
        assert relative(2.0, original) == math.inf


def test_tolerance_lookup_order() -> None:
    bitwise = CompareSettings(mode="bitwise", rtol=0.1, atol=0.1)
    assert tolerance_for(bitwise, ["w"], "float32") is None
    settings = CompareSettings(
        rtol=1e-3,
        atol=1e-4,
        overrides={"loss": {"rtol": 0.5, "atol": 0.0}, "layer.*": {"rtol": 0.2, "atol": 0.0}},
    )
    assert tolerance_for(settings, ["x", "loss"], "float32") == Tolerance(0.5, 0.0)
    assert tolerance_for(settings, ["layer.1.weight"], "float32") == Tolerance(0.2, 0.0)
    assert tolerance_for(settings, ["other"], "float32") == Tolerance(1e-3, 1e-4)
    assert tolerance_for(CompareSettings(), ["other"], "float32") == default_tolerance("float32")


def test_a_dtype_stats_does_not_know_compares_exactly() -> None:
    tol = tolerance_for(CompareSettings(), ["w"], "float8_e4m3fn")
    assert tol is not None
    assert tol == EXACT


def test_a_structural_difference_names_its_key_before_its_line() -> None:
    tally = ValueTally(CompareSettings())
    tally.structural("loss", "original", line=3)
    assert tally.first is not None
    assert tally.first.description == "loss is in the original but missing in the replay"
    assert (tally.first.key, tally.first.line) == ("loss", 3)
    rows = ValueTally(CompareSettings())
    rows.structural("", "replay", line=7)
    assert rows.first is not None
    assert rows.first.description == "line 7 is in the replay but missing in the original"
    assert rows.first.key is None
    assert (rows.total, rows.mismatches, rows.status()) == (1, 1, "different")


@pytest.mark.parametrize("present_in", ["original", "replay"])
def test_structural_counts_and_sides(present_in: str) -> None:
    tally = ValueTally(CompareSettings())
    tally.structural("k", present_in)
    other = "replay" if present_in == "original" else "original"
    assert tally.first is not None
    assert tally.first.description == f"k is in the {present_in} but missing in the {other}"


def test_a_number_and_a_string_differ_in_type_not_in_value() -> None:
    tally = ValueTally(CompareSettings())
    tally.value("lr", 1.0, "1.0", ["lr"])
    assert (tally.total, tally.mismatches, tally.inexact) == (1, 1, 0)
    assert tally.first is not None
    assert tally.first.kind == "type"
    assert tally.first.description == "lr: 1.0 != '1.0' (float vs str)"
    assert (tally.first.key, tally.first.original, tally.first.replay) == ("lr", "1.0", "'1.0'")


def test_each_differing_value_counts_once_and_the_first_is_kept() -> None:
    tally = ValueTally(CompareSettings())
    tally.value("a", "x", "y", ["a"], line=2)
    tally.value("", "p", "q", [], where="row 3")
    tally.value("c", "same", "same", ["c"])
    assert (tally.total, tally.mismatches) == (3, 2)
    assert tally.first is not None
    assert (tally.first.key, tally.first.line, tally.first.kind) == ("a", 2, "value")
    assert tally.first.description == "a: 'x' != 'y'"
    unnamed = ValueTally(CompareSettings())
    unnamed.value("", "p", "q", [], where="row 3")
    assert unnamed.first is not None
    assert (unnamed.first.key, unnamed.first.description) == (None, "row 3: 'p' != 'q'")


def test_differing_numbers_count_once_with_their_differences() -> None:
    tally = ValueTally(CompareSettings())
    tally.value("steps", 3, 5, ["steps"])
    assert (tally.total, tally.mismatches) == (1, 1)
    assert tally.first is not None
    assert (tally.first.abs_diff, tally.first.rel_diff) == (2.0, pytest.approx(2 / 3))
    floats = ValueTally(CompareSettings())
    floats.value("loss", 1.0, 2.0, ["loss"])
    floats.value("acc", 0.5, 0.5, ["acc"])
    assert (floats.total, floats.mismatches, floats.inexact) == (2, 1, 0)
    assert floats.first is not None
    assert (floats.first.abs_diff, floats.first.rel_diff) == (1.0, 1.0)


def test_a_value_within_tolerance_counts_once_as_inexact() -> None:
    tally = ValueTally(CompareSettings())
    tally.value("loss", 1.0, 1.0 + 1e-12, ["loss"])
    assert (tally.total, tally.mismatches, tally.inexact) == (1, 0, 1)
    assert tally.status() == "close"
    assert tally.first is None


def test_each_path_equal_once_mapped_is_counted() -> None:
    roots = [(["/home/u/proj"], ["/tmp/ws/code"])]
    tally = ValueTally(CompareSettings(path_roots=roots, shared_paths=[]))
    tally.value("best", "/home/u/proj/ckpt/e0.ckpt", "/tmp/ws/code/ckpt/e0.ckpt", ["best"])
    tally.value("data", "/home/u/proj/data", "/tmp/ws/code/data", ["data"])
    tally.value("name", "run", "run", ["name"])
    assert (tally.total, tally.mismatches, tally.mapped) == (3, 0, 2)
    result = tally.result("s.json", "structured")
    assert result.status == "identical"
    assert result.notes == [
        "2 path(s) equal once mapped: paths under /home/u/proj read as under the replay's "
        "/tmp/ws/code"
    ]
