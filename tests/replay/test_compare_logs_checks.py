"""Captured logs edges: which names are logs, and what a differing or missing line reports.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, compare_files
from ledger.replay.compare.logs import compare_log_files, is_log_file

LOGS = CompareSettings(include_logs=True)


@pytest.mark.parametrize(
    ("name", "is_log"),
    [
        ("stdout", True),
        ("STDERR", True),
        ("out/stdout.txt", True),
        ("stderr.LOG", True),
        ("logs/train.log", True),
        ("a.log/data.bin", False),
        ("my_stdout", False),
        ("stdout.json", False),
        ("train.log.gz", False),
        ("stdout.txt.bak", False),
    ],
)
def test_which_names_are_logs(name: str, is_log: bool) -> None:
    assert is_log_file(name) is is_log


def _pair(tmp_path: Path, a: bytes, b: bytes) -> tuple[Path, Path]:
    pa, pb = tmp_path / "a.log", tmp_path / "b.log"
    pa.write_bytes(a)
    pb.write_bytes(b)
    return pa, pb


def test_equal_lines_are_identical_whatever_the_line_endings(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"one\ntwo\n", b"one\r\ntwo")
    result = compare_log_files(a, b, LOGS)
    assert (result.status, result.mismatches, result.total, result.unit) == (
        "identical",
        0,
        2,
        "lines",
    )
    assert (result.path, result.comparator) == ("a.log", "logs")


def test_a_differing_line_is_content(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"one\ntwo\nthree\n", b"one\nTWO\nthree\n")
    result = compare_log_files(a, b, LOGS)
    assert (result.status, result.mismatches, result.total) == ("different", 1, 3)
    diff = result.first_difference
    assert diff is not None
    assert (diff.kind, diff.line, diff.description) == ("content", 2, "line 2 differs")
    assert (diff.original, diff.replay) == ("'two'", "'TWO'")


def test_lines_only_in_one_log_are_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"one\n", b"one\ntwo\nthree\n")
    longer = compare_log_files(a, b, LOGS)
    assert (longer.mismatches, longer.total) == (2, 3)
    diff = longer.first_difference
    assert diff is not None
    assert (diff.kind, diff.line, diff.description) == (
        "structure",
        2,
        "line 2 is only in the replay",
    )
    assert (diff.original, diff.replay) == (None, "'two'")
    shorter = compare_log_files(b, a, LOGS).first_difference
    assert shorter is not None
    assert shorter.description == "line 2 is only in the original"
    assert (shorter.original, shorter.replay) == ("'two'", None)


def test_bytes_that_are_not_utf8_are_compared_not_merged(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"ok \xff\n", b"ok \xfe\n")
    result = compare_files(a, b, LOGS)
    assert (result.status, result.mismatches) == ("different", 1)
    diff = result.first_difference
    assert diff is not None
    assert (diff.original, diff.replay) == ("'ok \\\\xff'", "'ok \\\\xfe'")
    c, d = _pair(tmp_path, b"ok \xff\n", b"ok \xff\r\n")
    assert compare_files(c, d, LOGS).status == "identical"


def test_lines_naming_the_working_tree_are_mapped_and_the_lines_after_them_compared(
    tmp_path: Path,
) -> None:
    """A log printing paths under the working tree (``/home/u/proj`` in the original, the
    replay's workspace in the replay): each such line counts as the same once mapped, and the
    lines after it are still compared."""
    roots = [(["/home/u/proj"], ["/tmp/ws/code"])]
    settings = CompareSettings(include_logs=True, path_roots=roots, shared_paths=[])
    a, b = _pair(
        tmp_path,
        b"/home/u/proj/data\n/home/u/proj/ckpt/e0.ckpt\nepoch 1\nloss 0.5\n",
        b"/tmp/ws/code/data\n/tmp/ws/code/ckpt/e0.ckpt\nepoch 1\nloss 0.7\n",
    )
    result = compare_log_files(a, b, settings)
    assert (result.status, result.mismatches, result.total) == ("different", 1, 4)
    diff = result.first_difference
    assert diff is not None
    assert (diff.line, diff.original, diff.replay) == (4, "'loss 0.5'", "'loss 0.7'")
    assert result.notes == [
        "2 path(s) equal once mapped: paths under /home/u/proj read as under the replay's "
        "/tmp/ws/code"
    ]
