"""TensorBoard scalar edges: counts, bitwise against tolerance, which divergence comes first.

Written against the survivors of mutation testing (scripts/mutation.py). Most go through
``compare_event_scalars`` with plain dicts: the alignment and the verdict need no event file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from _support import require_module

from ledger.replay.compare import CompareSettings, ToleranceSpec, comparator_for
from ledger.replay.compare.tensorboard import (
    compare_event_scalars,
    event_files,
    is_event_dir,
    is_event_file,
)

BITWISE = CompareSettings(mode="bitwise")
TOLERANCE = CompareSettings(mode="tolerance")
CLOSE = 1.0 + 2**-23  # one float32 ulp above 1: within the fp32 default tolerance


def test_event_files_are_told_by_their_last_name_part(tmp_path: Path) -> None:
    assert is_event_file("runs/x/events.out.tfevents.1.host")
    assert not is_event_file("tfevents/notes.txt")
    assert comparator_for("a/events.out.tfevents.9").name == "tensorboard"
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "b.tfevents.2").write_bytes(b"")
    (tmp_path / "tb" / "a.tfevents.1").write_bytes(b"")
    (tmp_path / "tb" / "notes.txt").write_bytes(b"")
    (tmp_path / "tb" / "x.tfevents.dir").mkdir()
    assert [p.name for p in event_files(tmp_path / "tb")] == ["a.tfevents.1", "b.tfevents.2"]
    assert event_files(tmp_path / "tb" / "a.tfevents.1") == [tmp_path / "tb" / "a.tfevents.1"]
    assert event_files(tmp_path / "tb" / "notes.txt") == []
    assert is_event_dir(tmp_path / "tb")
    assert not is_event_dir(tmp_path / "tb" / "a.tfevents.1")
    (tmp_path / "empty").mkdir()
    assert not is_event_dir(tmp_path / "empty")


def test_equal_scalars_count_every_key() -> None:
    a = {("loss", 0): 1.0, ("loss", 1): 0.5, ("lr", 0): 0.1}
    assert compare_event_scalars(a, dict(a), BITWISE) == (0, 3, 0, None)
    assert compare_event_scalars(a, dict(a), TOLERANCE) == (0, 3, 0, None)


def test_a_close_value_is_inexact_in_tolerance_and_a_mismatch_bitwise() -> None:
    a = {("loss", 0): 1.0, ("loss", 1): 1.0, ("loss", 2): 1.0}
    b = {("loss", 0): 1.0, ("loss", 1): CLOSE, ("loss", 2): CLOSE}
    mismatches, total, inexact, first = compare_event_scalars(a, b, TOLERANCE)
    assert (mismatches, total, inexact, first) == (0, 3, 2, None)
    mismatches, total, inexact, first = compare_event_scalars(a, b, BITWISE)
    assert (mismatches, total, inexact) == (2, 3, 0)
    assert first is not None
    assert (first.kind, first.key, first.step) == ("value", "loss", 1)
    assert (first.rtol, first.atol) == (None, None)
    assert first.abs_diff == pytest.approx(2**-23)
    assert first.rel_diff == pytest.approx(2**-23)
    assert first.description == f"tag 'loss' step 1: 1.0 != {CLOSE!r}"


def test_bitwise_tells_signed_zeros_apart() -> None:
    a, b = {("x", 0): 0.0}, {("x", 0): -0.0}
    assert compare_event_scalars(a, b, TOLERANCE)[:3] == (0, 1, 1)
    mismatches, _, _, first = compare_event_scalars(a, b, BITWISE)
    assert mismatches == 1
    assert first is not None
    assert (first.original, first.replay, first.rel_diff) == ("0.0", "-0.0", 0.0)


def test_the_first_bitwise_difference_is_the_earliest_step_then_tag() -> None:
    a = {("b", 1): 1.0, ("a", 2): 1.0, ("c", 1): 1.0}
    b = {("b", 1): 2.0, ("a", 2): 2.0, ("c", 1): 2.0}
    first = compare_event_scalars(a, b, BITWISE)[3]
    assert first is not None
    assert (first.key, first.step) == ("b", 1)


def test_at_one_step_the_first_tag_in_name_order_is_reported() -> None:
    tags = [f"t{i:02d}" for i in range(50)]  # set order varies with the hash seed
    a = {(t, 7): 1.0 for t in tags}
    b = {(t, 7): 2.0 for t in reversed(tags)}
    first = compare_event_scalars(a, b, BITWISE)[3]
    assert first is not None
    assert (first.key, first.step) == ("t00", 7)


def test_a_value_outside_tolerance_reports_the_tolerance() -> None:
    a, b = {("loss", 3): 1.0, ("loss", 4): 1.0}, {("loss", 3): 1.5, ("loss", 4): CLOSE}
    mismatches, total, inexact, first = compare_event_scalars(a, b, TOLERANCE)
    assert (mismatches, total, inexact) == (1, 2, 1)
    assert first is not None
    assert (first.step, first.rtol, first.atol, first.abs_diff) == (3, 1.3e-6, 1e-5, 0.5)
    loose = CompareSettings(overrides={"loss": ToleranceSpec(rtol=1.0, atol=0.0)})
    assert compare_event_scalars(a, b, loose)[:3] == (0, 2, 2)
    relative_only = CompareSettings(overrides={"loss": ToleranceSpec(rtol=0.1, atol=0.0)})
    over = compare_event_scalars(a, b, relative_only)[3]
    assert over is not None
    assert (over.step, over.rtol, over.atol) == (3, 0.1, 0.0)  # a tolerance, not bitwise


def test_a_missing_step_counts_and_ranks_against_value_differences() -> None:
    a = {("loss", 0): 1.0, ("loss", 1): 1.0, ("loss", 2): 1.0}
    b = {("loss", 0): 1.0, ("loss", 2): 9.0}
    mismatches, total, inexact, first = compare_event_scalars(a, b, TOLERANCE)
    assert (mismatches, total, inexact) == (2, 3, 0)
    assert first is not None
    assert (first.kind, first.step) == ("structure", 1)
    assert first.description == (
        "tag 'loss' step 1 was logged by the original only (missing in the replay)"
    )
    later = compare_event_scalars(b, {("loss", 0): 2.0}, BITWISE)
    assert later[:3] == (2, 2, 0)
    assert later[3] is not None
    assert (later[3].kind, later[3].step) == ("value", 0)  # the earlier step wins
    same_step = compare_event_scalars(
        {("a", 5): 1.0, ("b", 5): 1.0}, {("a", 5): 1.0, ("b", 5): 2.0, ("c", 5): 1.0}, TOLERANCE
    )
    assert same_step[3] is not None
    assert same_step[3].kind == "value"  # at one step a value difference comes first
    extra = compare_event_scalars({}, {("acc", 2): 1.0}, TOLERANCE)[3]
    assert extra is not None
    assert extra.description == (
        "tag 'acc' step 2 was logged by the replay only (missing in the original)"
    )


def _write(logdir: Path, suffix: str, rows: Sequence[tuple[int, float]]) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(logdir), filename_suffix=suffix)
    for step, value in rows:
        writer.add_scalar("loss", value, step, walltime=1.0e9 + step)
    writer.close()


@pytest.mark.torch
def test_a_step_logged_again_is_noted_and_the_last_value_counts(tmp_path: Path) -> None:
    require_module("tensorboard")
    pytest.importorskip("torch")
    from ledger.replay.compare import compare_files

    _write(tmp_path / "a", ".1", [(0, 1.0), (1, 2.0)])
    _write(tmp_path / "a", ".2", [(1, 3.0)])
    _write(tmp_path / "b", ".1", [(0, 1.0), (1, 3.0)])
    result = compare_files(tmp_path / "a", tmp_path / "b", BITWISE)
    assert (result.status, result.total) == ("identical", 2)
    assert result.notes == [
        "original: 1 (tag, step) pairs were logged again; the last value counts",
        "2 vs 1 event files; 1 tags",
    ]
    _write(tmp_path / "c", ".1", [(0, 1.0), (1, 3.0 + 2**-22)])
    close = compare_files(tmp_path / "b", tmp_path / "c", TOLERANCE)
    assert (close.status, close.mismatches, close.unit) == ("close", 0, "scalars")
    assert close.notes == ["1 vs 1 event files; 1 tags"]


def test_without_the_tensorboard_package_event_files_are_not_comparable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from ledger.replay.compare._common import NotComparable
    from ledger.replay.compare.tensorboard import read_event_scalars

    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto", None)  # not installed
    (tmp_path / "events.out.tfevents.1").write_bytes(b"")
    with pytest.raises(NotComparable, match="the tensorboard package is needed"):
        read_event_scalars(tmp_path / "events.out.tfevents.1")


def _record(payload: bytes) -> bytes:
    """One TFRecord as the reader takes it: length, its CRC (not checked), payload, CRC."""
    import struct

    return struct.pack("<Q", len(payload)) + bytes(4) + payload + bytes(4)


def _scalar_event(tag: str, step: int, value: float) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(step=step, wall_time=1.0e9, summary=summary).SerializeToString()


def test_the_notes_of_every_event_file_of_a_directory_are_kept(tmp_path: Path) -> None:
    """An unreadable record in the first of two event files is noted, though the second file
    reads cleanly."""
    require_module("tensorboard")
    from ledger.replay.compare import compare_files

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    good = _record(_scalar_event("loss", 1, 0.5))
    (tmp_path / "a" / "events.out.tfevents.1").write_bytes(_record(b"\xff\xff\xff"))
    (tmp_path / "a" / "events.out.tfevents.2").write_bytes(good)
    (tmp_path / "b" / "events.out.tfevents.1").write_bytes(good)
    result = compare_files(tmp_path / "a", tmp_path / "b", BITWISE)
    assert (result.status, result.total) == ("identical", 1)
    assert result.notes == [
        "original: events.out.tfevents.1: an unreadable event record was skipped",
        "2 vs 1 event files; 1 tags",
    ]
