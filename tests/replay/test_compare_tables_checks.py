"""CSV and TSV edges: cells, the header rule, ragged rows and unreadable files.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, ToleranceSpec, comparator_for, compare_files
from ledger.replay.compare.tables import parse_cell, read_table

TOLERANCE = CompareSettings(mode="tolerance")


def _pair(tmp_path: Path, name: str, a: str, b: str) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    pa, pb = tmp_path / "a" / name, tmp_path / "b" / name
    pa.write_text(a)
    pb.write_text(b)
    return pa, pb


@pytest.mark.parametrize("name", ["M.CSV", "x.Tsv"])
def test_table_names_whatever_their_case(name: str) -> None:
    assert comparator_for(name).name == "table"


def test_cells_are_ints_floats_or_the_text_itself() -> None:
    assert parse_cell("+3") == 3
    assert isinstance(parse_cell(" -12 "), int)
    assert parse_cell(" -12 ") == -12
    assert parse_cell("1e3") == 1000.0
    assert isinstance(parse_cell("1.0"), float)
    assert math.isinf(float(parse_cell("inf")))
    assert math.isnan(float(parse_cell("nan")))
    assert parse_cell(" loss ") == " loss "  # text is kept as written
    assert parse_cell("") == ""


def test_the_delimiter_follows_the_suffix(tmp_path: Path) -> None:
    (tmp_path / "t.TSV").write_text("a,b\tc\n")
    assert read_table(tmp_path / "t.TSV") == [["a,b", "c"]]
    (tmp_path / "c.csv").write_text("a,b\tc\n")
    assert read_table(tmp_path / "c.csv") == [["a", "b\tc"]]


def test_a_table_that_is_not_utf8_is_not_comparable(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "x\n1\n", "x\n2\n")
    b.write_bytes(b"x\n\xff\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert result.reason.startswith("cannot read m.csv as a table: ")


def test_a_row_of_text_over_numbers_is_a_header(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "step,loss\n1,2.0\n", "step,loss\n1,2.5\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.notes == ["header: step, loss"]
    assert (result.mismatches, result.total) == (1, 4)
    assert result.first_difference is not None
    assert result.first_difference.description.startswith("row 2, column 'loss': 2.0 != 2.5")
    c, d = _pair(tmp_path, "h.csv", "step,loss\n", "step,loss\n")
    d.write_text("step,Loss\n")
    one_row = compare_files(c, d, TOLERANCE)  # a lone row is data, not a header
    assert one_row.notes == []
    assert one_row.first_difference is not None
    assert one_row.first_difference.description.startswith("row 1, column '2'")


def test_a_first_row_with_a_number_or_a_blank_is_data(tmp_path: Path) -> None:
    for first in ("step,1.5", "step, ", "step,nan"):
        a, b = _pair(tmp_path, "m.csv", f"{first}\n1,2\n", f"{first}\n1,3\n")
        result = compare_files(a, b, TOLERANCE)
        assert result.notes == [], first
        assert result.first_difference is not None
        assert result.first_difference.description.startswith("row 2, column '2'"), first
    c, d = _pair(tmp_path, "e.csv", "\n1,2\n", "\n1,3\n")
    empty_first = compare_files(c, d, TOLERANCE)
    assert empty_first.notes == []
    assert empty_first.first_difference is not None
    assert empty_first.first_difference.key == "2"


def test_header_cells_are_compared_as_text(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "step,loss\n1,2\n", "step,LOSS\n1,2\n")
    result = compare_files(a, b, TOLERANCE)
    assert (result.status, result.mismatches) == ("different", 1)
    assert result.first_difference is not None
    assert result.first_difference.line == 1
    assert result.first_difference.description == "row 1, column 'loss': 'loss' != 'LOSS'"


def test_columns_past_the_header_are_numbered(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "step,loss\n1,2,3\n", "step,loss\n1,2,4\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.first_difference is not None
    assert result.first_difference.description.startswith("row 2, column '3'")
    assert result.first_difference.key == "3"


def test_a_cell_only_in_the_original_is_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "1,2\n3,4\n", "1,2\n3\n")
    result = compare_files(a, b, TOLERANCE)
    assert (result.mismatches, result.total) == (1, 4)
    diff = result.first_difference
    assert diff is not None
    assert (diff.kind, diff.line) == ("structure", 2)
    assert diff.description == "row 2, column '2' is in the original but missing in the replay"
    c, d = _pair(tmp_path, "n.csv", "1\n3\n", "1\n3,4\n")
    extra = compare_files(c, d, TOLERANCE).first_difference
    assert extra is not None
    assert extra.description == "row 2, column '2' is in the replay but missing in the original"


def test_a_row_only_in_the_original_is_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "1\n2\n3\n", "1\n")
    result = compare_files(a, b, TOLERANCE)
    assert (result.mismatches, result.total) == (2, 3)
    assert result.first_difference is not None
    assert result.first_difference.description == (
        "line 2 is in the original but missing in the replay"
    )


def test_overrides_name_a_column_or_one_cell(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "loss\n1.0\n1.0\n", "loss\n1.0\n1.05\n")
    one_cell = CompareSettings(overrides={"loss[3]": ToleranceSpec(rtol=0.1, atol=0.0)})
    assert compare_files(a, b, one_cell).status == "close"
    other_cell = CompareSettings(overrides={"loss[2]": ToleranceSpec(rtol=0.1, atol=0.0)})
    assert compare_files(a, b, other_cell).status == "different"
    c, d = _pair(tmp_path, "n.csv", "1.0,1.0\n", "1.0,1.05\n")
    by_number = CompareSettings(overrides={"2": ToleranceSpec(rtol=0.1, atol=0.0)})
    assert compare_files(c, d, by_number).status == "close"


def test_a_header_followed_by_a_blank_line_is_still_a_header(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "step,loss\n\n1,2.0\n", "step,loss\n\n1,2.5\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.notes == ["header: step, loss"]
    assert result.first_difference is not None
    assert result.first_difference.description.startswith("row 3, column 'loss'")


def test_a_table_ending_in_a_blank_line_keeps_its_header(tmp_path: Path) -> None:
    """Only an empty first row means "no header": a blank line at the end (an extra newline
    some writers leave) does not."""
    a, b = _pair(tmp_path, "m.csv", "step,loss\n1,2.0\n\n", "step,loss\n1,2.5\n\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.notes == ["header: step, loss"]
    assert result.first_difference is not None
    assert result.first_difference.description.startswith("row 2, column 'loss': 2.0 != 2.5")


def test_each_cell_past_the_shorter_row_is_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "1,2\n3\n", "1,2\n3,4,5\n")
    result = compare_files(a, b, TOLERANCE)
    assert (result.mismatches, result.total) == (2, 5)


SKIP_TIMINGS = CompareSettings(mode="tolerance", skip_volatile=True)


def test_the_columns_after_a_timing_column_are_compared(tmp_path: Path) -> None:
    a, b = _pair(
        tmp_path, "m.csv", "step,epoch_time,loss\n1,0.5,0.25\n", "step,epoch_time,loss\n1,0.7,0.5\n"
    )
    result = compare_files(a, b, SKIP_TIMINGS)
    assert (result.status, result.mismatches) == ("different", 1)
    assert result.first_difference is not None
    assert result.first_difference.description.startswith("row 2, column 'loss': 0.25 != 0.5")
    assert result.notes[-1] == "not compared: column 'epoch_time' (timing)"


def test_a_timing_columns_header_is_still_compared(tmp_path: Path) -> None:
    """Only a timing column's values are left out: its name in the header is text like any
    other, so a renamed column is a difference."""
    a, b = _pair(tmp_path, "m.csv", "step,epoch_time\n1,0.5\n", "step,epoch_secs\n1,0.7\n")
    result = compare_files(a, b, SKIP_TIMINGS)
    assert (result.status, result.mismatches) == ("different", 1)
    assert result.first_difference is not None
    assert result.first_difference.description == (
        "row 1, column 'epoch_time': 'epoch_time' != 'epoch_secs'"
    )
