"""JSON, JSON Lines, YAML, CSV and TSV compared as data, with tolerance or bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, ToleranceSpec, compare_files

BITWISE = CompareSettings(mode="bitwise")
TOLERANCE = CompareSettings(mode="tolerance")


def _pair(tmp_path: Path, name: str, a: str, b: str) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    pa, pb = tmp_path / "a" / name, tmp_path / "b" / name
    pa.write_text(a)
    pb.write_text(b)
    return pa, pb


def test_json_order_and_formatting_do_not_matter(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"a": 1, "b": [1.5, "x"]}', '{\n "b": [1.50, "x"],\n "a": 1}')
    result = compare_files(a, b, BITWISE)
    assert (result.comparator, result.status, result.total) == ("structured", "identical", 3)


def test_json_tolerance_versus_bitwise(tmp_path: Path) -> None:
    orig = {"metrics": {"loss": 0.1, "acc": 0.9}, "history": [{"loss": 2.0}, {"loss": 1.0}]}
    rep = json.loads(json.dumps(orig))
    rep["history"][1]["loss"] = 1.0 + 1e-12
    a, b = _pair(tmp_path, "m.json", json.dumps(orig), json.dumps(rep))
    assert compare_files(a, b, TOLERANCE).status == "close"
    bitwise = compare_files(a, b, BITWISE)
    assert bitwise.status == "different"
    assert (bitwise.mismatches, bitwise.total) == (1, 4)
    diff = bitwise.first_difference
    assert diff is not None
    assert diff.key == "history[1].loss"
    assert (diff.original, diff.replay) == ("1.0", repr(1.0 + 1e-12))
    assert diff.abs_diff == pytest.approx(1e-12, rel=1e-3)
    assert diff.rel_diff == pytest.approx(1e-12, rel=1e-3)


def test_json_first_divergence_outside_fp64_tolerance(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"loss": [1.0, 2.0, 3.0]}', '{"loss": [1.0, 2.001, 3.1]}')
    result = compare_files(a, b, TOLERANCE)
    assert result.status == "different"
    assert result.mismatches == 2
    assert result.first_difference is not None
    assert result.first_difference.key == "loss[1]"
    assert (result.first_difference.rtol, result.first_difference.atol) == (1e-7, 1e-7)


def test_negative_zero_and_nan(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"x": 0.0, "y": NaN}', '{"x": -0.0, "y": NaN}')
    assert compare_files(a, b, TOLERANCE).status == "close"
    bitwise = compare_files(a, b, BITWISE)
    assert bitwise.status == "different"
    assert bitwise.first_difference is not None
    assert (bitwise.first_difference.key, bitwise.first_difference.replay) == ("x", "-0.0")
    assert bitwise.mismatches == 1  # NaN matched NaN in the same place

    c, d = _pair(tmp_path, "n.json", '{"y": NaN}', '{"y": NaN}')
    d.write_text('{ "y" : NaN }')  # not byte-identical, same content
    assert compare_files(c, d, BITWISE).status == "identical"
    e, f = _pair(tmp_path, "o.json", '{"y": NaN}', '{"y": 1.0}')
    assert compare_files(e, f, TOLERANCE).status == "different"


def test_types_strings_and_structure(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"n": 1, "s": "abc"}', '{"n": 1.0, "s": "abc"}')
    assert compare_files(a, b, TOLERANCE).status == "close"
    bitwise = compare_files(a, b, BITWISE).first_difference
    assert bitwise is not None
    assert bitwise.kind == "type"

    a, b = _pair(tmp_path, "s.json", '{"s": "abc"}', '{"s": "abd"}')
    text = compare_files(a, b, TOLERANCE).first_difference
    assert text is not None
    assert (text.kind, text.original, text.replay) == ("value", "'abc'", "'abd'")

    a, b = _pair(tmp_path, "k.json", '{"a": {"b": 1, "c": 2}}', '{"a": {"b": 1}, "d": [1]}')
    result = compare_files(a, b, TOLERANCE)
    assert result.status == "different"
    assert result.mismatches == 2
    assert result.first_difference is not None
    assert result.first_difference.kind == "structure"
    assert result.first_difference.key == "a.c"
    assert result.first_difference.description == "a.c is in the original but missing in the replay"


def test_odd_keys_are_quoted(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"lr.sched": {"a b": 1}}', '{"lr.sched": {"a b": 2}}')
    diff = compare_files(a, b, TOLERANCE).first_difference
    assert diff is not None
    assert diff.key == '["lr.sched"]["a b"]'


def test_overrides_by_path_leaf_and_glob(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"val": {"loss": 1.0}}', '{"val": {"loss": 1.01}}')
    loose = ToleranceSpec(rtol=0.05, atol=0.0)
    for key in ("val.loss", "loss", "*.loss"):
        settings = CompareSettings(overrides={key: loose})
        assert compare_files(a, b, settings).status == "close", key
    assert compare_files(a, b, CompareSettings(rtol=0.05, atol=0.0)).status == "close"
    assert compare_files(a, b, TOLERANCE).status == "different"


def test_yaml_and_json_lines(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "c.yaml", "lr: 0.1\nlayers: [1, 2]\n", "layers: [1, 3]\nlr: 0.1\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.first_difference is not None
    assert result.first_difference.key == "layers[1]"
    lines_a = '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n'
    lines_b = '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.6}\n{"step": 3, "loss": 1.0}\n'
    a, b = _pair(tmp_path, "m.jsonl", lines_a, lines_b)
    result = compare_files(a, b, TOLERANCE)
    assert (result.mismatches, result.total) == (2, 5)
    assert result.first_difference is not None
    assert result.first_difference.key == "[1].loss"


def test_unsafe_yaml_and_bad_json_are_not_comparable(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = f"!!python/object/apply:os.system ['touch {marker}']\n"
    a, b = _pair(tmp_path, "c.yaml", evil, evil + "\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert result.reason.startswith("cannot parse c.yaml as YAML")
    assert not marker.exists()
    a, b = _pair(tmp_path, "m.json", "{", "{}")
    result = compare_files(a, b, TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert result.reason.startswith("cannot parse m.json as JSON")


CSV_A = "step,loss,tag\n1,2.5,a\n2,1.25,b\n3,0.0,c\n"


def test_csv_reports_row_and_column(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", CSV_A, CSV_A.replace("1.25", "1.5"))
    result = compare_files(a, b, TOLERANCE)
    assert (result.comparator, result.status, result.unit) == ("table", "different", "cells")
    assert (result.mismatches, result.total) == (1, 12)
    diff = result.first_difference
    assert diff is not None
    assert (diff.key, diff.line, diff.original, diff.replay) == ("loss", 3, "1.25", "1.5")
    assert diff.description.startswith("row 3, column 'loss'")
    assert diff.abs_diff == 0.25
    assert diff.rel_diff == 0.2


def test_csv_tolerance_bitwise_negative_zero_nan(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", "x,y\n0.0,nan\n1.0,2\n", "x,y\n-0.0,nan\n1.0000000000001,2\n")
    assert compare_files(a, b, TOLERANCE).status == "close"
    bitwise = compare_files(a, b, BITWISE)
    assert bitwise.mismatches == 2  # -0.0 and the last digit; nan matched nan
    assert bitwise.first_difference is not None
    assert (bitwise.first_difference.key, bitwise.first_difference.line) == ("x", 2)
    c, d = _pair(tmp_path, "n.csv", "x\n1.0\n", "x\n1.00\n")  # same number, other text
    assert compare_files(c, d, BITWISE).status == "identical"


def test_csv_rows_and_columns_missing(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.csv", CSV_A, CSV_A + "4,0.0,d\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.first_difference is not None
    assert result.first_difference.kind == "structure"
    assert result.first_difference.line == 5
    assert (
        result.first_difference.description == "line 5 is in the replay but missing in the original"
    )
    a, b = _pair(tmp_path, "n.csv", "1,2\n3,4\n", "1,2\n3\n")
    result = compare_files(a, b, TOLERANCE)
    assert result.first_difference is not None
    assert result.first_difference.key == "row 2, column '2'"


def test_tsv_and_column_override(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.tsv", "step\tloss\n1\t1.0\n", "step\tloss\n1\t1.001\n")
    assert compare_files(a, b, TOLERANCE).status == "different"
    settings = CompareSettings(overrides={"loss": ToleranceSpec(rtol=1e-2, atol=0.0)})
    assert compare_files(a, b, settings).status == "close"
    a, b = _pair(tmp_path, "s.tsv", "step\tloss\n1\t1.0\n", "step\tloss\n2\t1.0\n")
    steps = compare_files(a, b, CompareSettings(rtol=1.0, atol=1.0))
    assert steps.status == "close"  # the user widened even integers
    assert compare_files(a, b, TOLERANCE).status == "different"  # integers are exact
