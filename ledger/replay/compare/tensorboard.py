"""TensorBoard event files, compared by (tag, step, value) and never by file.

Event file names hold the wall time, host and pid, and their records hold wall times, so two runs
that logged the same scalars never have equal files. Files are paired by directory and all the
event files of one directory are merged (a restarted run writes several). Only scalars are
compared; images, histograms and graphs are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...capture.tensorboard import read_scalars
from ...records.verdict_parts import (
    CompareSettings,
    Difference,
    FileComparison,
    FileStatus,
)
from ...stats import EXACT, Tolerance, bitwise_equal, compare_series
from ...stats.series import StructuralDivergence, ValueDivergence
from ._common import NotComparable, relative, tolerance_for

__all__ = [
    "compare_event_scalars",
    "compare_tensorboard",
    "event_files",
    "is_event_dir",
    "is_event_file",
    "read_event_scalars",
]

Scalars = dict[tuple[str, int], float]


def is_event_file(name: str) -> bool:
    return "tfevents" in name.rsplit("/", 1)[-1]


def event_files(path: Path) -> list[Path]:
    """The event files directly in ``path`` (or ``path`` itself), oldest name first."""
    if path.is_file():
        return [path] if is_event_file(path.name) else []
    return sorted(p for p in path.iterdir() if p.is_file() and is_event_file(p.name))


def is_event_dir(path: Path) -> bool:
    return path.is_dir() and bool(event_files(path))


def read_event_scalars(path: Path) -> tuple[Scalars, list[str]]:
    """(tag, step) -> value merged over the event files of a directory; later files win."""
    try:
        from tensorboard.compat.proto import event_pb2  # noqa: F401
    except ImportError:
        raise NotComparable("the tensorboard package is needed to read event files") from None
    merged: Scalars = {}
    notes: list[str] = []
    files = event_files(path)
    repeated = 0
    for f in files:
        scalars, read_notes = read_scalars(f)
        notes += read_notes
        for tag, rows in scalars.items():
            for step, _wall, value in rows:
                repeated += (tag, step) in merged
                merged[(tag, step)] = value
    if repeated:
        notes.append(f"{repeated} (tag, step) pairs were logged again; the last value counts")
    return merged, notes


def compare_event_scalars(
    original: Mapping[tuple[str, int], float],
    replay: Mapping[tuple[str, int], float],
    settings: CompareSettings,
) -> tuple[int, int, int, Difference | None]:
    """(mismatches, total, inexact, first difference) over the union of (tag, step) keys.

    Values are aligned by key through ledger.stats ``compare_series`` (fp32 defaults: TensorBoard
    stores scalars as float32); bitwise mode adds the check that equal values have equal bits.
    """
    tags = {t for t, _ in original} | {t for t, _ in replay}
    tols: dict[str, Tolerance] = {t: tolerance_for(settings, [t], "float32") or EXACT for t in tags}
    s = compare_series(original, replay, overrides=tols, default_dtype="float32")
    shared = sorted(original.keys() & replay.keys(), key=lambda k: (k[1], k[0]))
    bit_diff = [k for k in shared if not bitwise_equal(original[k], replay[k])]
    structural = _structural(s.first_structural)
    if settings.mode == "bitwise":
        first_value = _value(_bit_divergence(bit_diff[0], original, replay)) if bit_diff else None
        mismatches, inexact = len(bit_diff), 0
    else:
        first_value = _value(s.first_divergence) if s.first_divergence else None
        mismatches, inexact = s.mismatches, len(bit_diff) - s.mismatches
    candidates = [d for d in (first_value, structural) if d is not None]
    first = min(candidates, key=lambda d: (d.step, d.kind != "value")) if candidates else None
    return mismatches + s.structural_count, s.total_keys, inexact, first


def _bit_divergence(
    key: tuple[str, int],
    original: Mapping[tuple[str, int], float],
    replay: Mapping[tuple[str, int], float],
) -> ValueDivergence:
    o, r = original[key], replay[key]
    abs_diff = abs(r - o)
    return ValueDivergence(key[0], key[1], o, r, abs_diff, relative(abs_diff, o), 0.0, 0.0)


def _value(d: ValueDivergence) -> Difference:
    bitwise = d.rtol == 0 and d.atol == 0
    return Difference(
        kind="value",
        description=f"tag {d.metric!r} step {d.step}: {d.original!r} != {d.replay!r}",
        key=d.metric,
        step=d.step,
        original=repr(d.original),
        replay=repr(d.replay),
        abs_diff=d.abs_diff,
        rel_diff=d.rel_diff,
        rtol=None if bitwise else d.rtol,
        atol=None if bitwise else d.atol,
    )


def _structural(d: StructuralDivergence | None) -> Difference | None:
    if d is None:
        return None
    other = "replay" if d.present_in == "original" else "original"
    return Difference(
        kind="structure",
        description=f"tag {d.metric!r} step {d.step} was logged by the {d.present_in} only "
        f"(missing in the {other})",
        key=d.metric,
        step=d.step,
    )


def compare_tensorboard(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    """Compare two event files, or two directories of them (merged per directory)."""
    a, notes_a = read_event_scalars(original)
    b, notes_b = read_event_scalars(replay)
    mismatches, total, inexact, first = compare_event_scalars(a, b, settings)
    notes = [f"original: {n}" for n in notes_a] + [f"replay: {n}" for n in notes_b]
    notes.append(
        f"{len(event_files(original))} vs {len(event_files(replay))} event files; "
        f"{len({t for t, _ in a} | {t for t, _ in b})} tags"
    )
    status: FileStatus = "different" if mismatches else ("close" if inexact else "identical")
    return FileComparison(
        path=original.name,
        comparator="tensorboard",
        status=status,
        first_difference=first,
        mismatches=mismatches,
        total=total,
        unit="scalars",
        notes=notes,
    )
