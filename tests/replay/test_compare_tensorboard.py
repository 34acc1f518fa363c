"""TensorBoard scalars compared by (tag, step, value), whatever the event files are called."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, compare_files

pytest.importorskip("tensorboard")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LOSS = [2.3026, 1.9, 1.5, 1.2, 1.0]


def _write(
    logdir: Path,
    suffix: str,
    losses: Sequence[float] = LOSS,
    *,
    steps: Sequence[int] | None = None,
    t0: float = 1.0e9,
) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(logdir), filename_suffix=suffix)
    for i, (step, loss) in enumerate(zip(steps or range(len(losses)), losses, strict=True)):
        writer.add_scalar("train/loss", loss, step, walltime=t0 + i)
        writer.add_scalar("train/lr", 0.1 / (step + 1), step, walltime=t0 + i)
    writer.close()
    return logdir


def _event_files(logdir: Path) -> list[Path]:
    return sorted(p for p in logdir.iterdir() if "tfevents" in p.name)


def test_same_scalars_in_other_directories_and_names_are_identical(tmp_path: Path) -> None:
    a = _write(tmp_path / "run1" / "tb", ".host-a", t0=1.0e9)
    b = _write(tmp_path / "run2" / "logs", ".host-b", t0=2.0e9)
    [fa], [fb] = _event_files(a), _event_files(b)
    assert fa.name != fb.name
    assert fa.read_bytes() != fb.read_bytes()  # wall times differ
    by_dir = compare_files(a, b, CompareSettings(mode="bitwise"))
    assert (by_dir.comparator, by_dir.status) == ("tensorboard", "identical")
    assert (by_dir.mismatches, by_dir.total, by_dir.unit) == (0, 10, "scalars")
    assert by_dir.path == "tb/*tfevents*"
    by_file = compare_files(fa, fb, CompareSettings(mode="bitwise"))
    assert (by_file.comparator, by_file.status) == ("tensorboard", "identical")


def test_changed_value_is_reported_at_its_step(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", ".a")
    changed = list(LOSS)
    changed[3] = 1.25
    changed[4] = 1.5
    b = _write(tmp_path / "b", ".b", changed)
    result = compare_files(a, b, CompareSettings())
    assert result.status == "different"
    assert (result.mismatches, result.total) == (2, 10)
    diff = result.first_difference
    assert diff is not None
    assert (diff.kind, diff.key, diff.step) == ("value", "train/loss", 3)
    assert float(diff.original or "nan") == pytest.approx(1.2, rel=1e-6)  # stored as float32
    assert float(diff.replay or "nan") == 1.25
    assert (diff.rtol, diff.atol) == (1.3e-6, 1e-5)


def test_stats_test_vector_diverges_at_index_3(tmp_path: Path) -> None:
    """STATS.md test vector: fp32 defaults put the first divergence at step 3."""
    a = _write(tmp_path / "a", ".a")
    b = _write(tmp_path / "b", ".b", [2.3026, 1.9000001, 1.5000004, 1.2001, 1.01])
    diff = compare_files(a, b, CompareSettings()).first_difference
    assert diff is not None
    assert diff.step == 3


def test_missing_step_is_structural(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", ".a")
    b = _write(tmp_path / "b", ".b", LOSS[:3] + LOSS[4:], steps=[0, 1, 2, 4])
    result = compare_files(a, b, CompareSettings())
    assert result.status == "different"
    assert result.first_difference is not None
    assert (result.first_difference.kind, result.first_difference.step) == ("structure", 3)
    assert result.first_difference.key in ("train/loss", "train/lr")


def test_several_files_in_one_directory_are_merged(tmp_path: Path) -> None:
    """A restarted run writes a second event file; its scalars continue the first's."""
    whole = _write(tmp_path / "whole", ".w")
    parts = tmp_path / "parts"
    _write(parts, ".1", LOSS[:2], steps=[0, 1], t0=1.0e9)
    _write(parts, ".2", LOSS[2:], steps=[2, 3, 4], t0=1.1e9)
    assert len(_event_files(parts)) == 2
    result = compare_files(whole, parts, CompareSettings(mode="bitwise"))
    assert result.status == "identical", result
    assert "1 vs 2 event files; 2 tags" in result.notes


def test_bitwise_catches_negative_zero(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", ".a", [0.0, 1.0])
    b = _write(tmp_path / "b", ".b", [-0.0, 1.0])
    assert compare_files(a, b, CompareSettings()).status == "close"
    result = compare_files(a, b, CompareSettings(mode="bitwise"))
    assert result.status == "different"
    assert result.first_difference is not None
    assert (result.first_difference.step, result.first_difference.replay) == (0, "-0.0")
