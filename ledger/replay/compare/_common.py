"""Shared by the comparators: tolerance lookup, the value tally, and the not-comparable signal."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

from ...records.verdict_parts import (
    CompareSettings,
    Difference,
    DifferenceKind,
    FileComparison,
    FileStatus,
)
from ...stats import EXACT, Tolerance, bitwise_equal, default_tolerance, is_close
from .volatile import PathMap, not_compared_text, volatile_reason

__all__ = [
    "NotComparable",
    "ValueTally",
    "relative",
    "short_repr",
    "tolerance_for",
]

_REPR_LIMIT = 200


class NotComparable(Exception):
    """Raised by a comparator that cannot (or must not) read a file; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def tolerance_for(settings: CompareSettings, names: Sequence[str], dtype: Any) -> Tolerance | None:
    """The tolerance for a value known by ``names``; None in bitwise mode.

    A dtype ledger.stats does not know (float8, say) compares exactly unless the user gave a
    tolerance: guessing one would hide differences.
    """
    if settings.mode == "bitwise":
        return None
    for name in names:
        spec = settings.overrides.get(name)
        if spec is not None:
            return Tolerance(spec.rtol, spec.atol)
    for pattern, spec in settings.overrides.items():
        if any(fnmatchcase(name, pattern) for name in names):
            return Tolerance(spec.rtol, spec.atol)
    if settings.rtol is not None and settings.atol is not None:
        return Tolerance(settings.rtol, settings.atol)
    try:
        return default_tolerance(dtype)
    except ValueError:
        return EXACT


def relative(abs_diff: float, original: float) -> float:
    """``abs_diff / |original|``, infinite when the original is 0 and the values differ."""
    if math.isnan(abs_diff):
        return math.nan
    if original == 0 or math.isinf(original) or math.isnan(original):
        return 0.0 if abs_diff == 0 else math.inf
    return abs_diff / abs(original)


def short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class ValueTally:
    """Counts compared values and keeps the first difference, in the order values are added.

    ``inexact`` counts values that are within tolerance but not bit for bit equal: a file with
    some is "close", not "identical". Two strings that differ only in the working tree's root
    (``settings.path_roots``) are equal, and counted in ``mapped``; values named like timings
    (``settings.skip_volatile``) are left out and listed in ``not_compared``
    (ledger/replay/compare/volatile.py).
    """

    def __init__(self, settings: CompareSettings, unit: str = "values") -> None:
        self.settings = settings
        self.unit = unit
        self.total = 0
        self.mismatches = 0
        self.inexact = 0
        self.mapped = 0
        self.first: Difference | None = None
        self.notes: list[str] = []
        self.not_compared: dict[str, str] = {}
        self.paths = PathMap.of(settings.path_roots, settings.shared_paths)

    def skip(self, name: str, label: str) -> bool:
        """Leave out a value called ``name`` (shown as ``label``) that a replay cannot keep
        equal (a timing, a process id), when the settings ask for it."""
        if not self.settings.skip_volatile:
            return False
        reason = volatile_reason(name, self.settings.timing)
        if reason is None:
            return False
        self.not_compared[label] = reason
        return True

    def difference(self, diff: Difference) -> None:
        if self.first is None:
            self.first = diff

    def structural(
        self, key: str, present_in: str, *, line: int | None = None, where: str | None = None
    ) -> None:
        """A value present in only one file: a difference that no tolerance can absolve."""
        self.total += 1
        self.mismatches += 1
        other = "replay" if present_in == "original" else "original"
        where = where or (f"line {line}" if line is not None and not key else key)
        self.difference(
            Difference(
                kind="structure",
                description=f"{where} is in the {present_in} but missing in the {other}",
                key=key or None,
                line=line,
            )
        )

    def value(
        self,
        key: str,
        original: Any,
        replay: Any,
        names: Sequence[str],
        *,
        where: str | None = None,
        line: int | None = None,
        step: int | None = None,
    ) -> None:
        """Compare two leaf values: numbers numerically, everything else exactly."""
        self.total += 1
        where = where or key
        if _is_number(original) and _is_number(replay):
            self._number(key, original, replay, names, where, line, step)
            return
        same_type = type(original) is type(replay)
        if same_type and original == replay:
            return
        if isinstance(original, str) and same_type and self.paths.same(original, replay):
            self.mapped += 1  # the same file, under the working tree and under the workspace
            return
        kind: DifferenceKind = "value" if same_type else "type"
        self.mismatches += 1
        detail = "" if same_type else f" ({type(original).__name__} vs {type(replay).__name__})"
        self.difference(
            Difference(
                kind=kind,
                description=f"{where}: {short_repr(original)} != {short_repr(replay)}{detail}",
                key=key or None,
                line=line,
                step=step,
                original=short_repr(original),
                replay=short_repr(replay),
            )
        )

    def _number(
        self,
        key: str,
        original: Any,
        replay: Any,
        names: Sequence[str],
        where: str,
        line: int | None,
        step: int | None,
    ) -> None:
        ints = isinstance(original, numbers.Integral) and isinstance(replay, numbers.Integral)
        if ints and original == replay:
            return
        if not ints and type(original) is type(replay) and bitwise_equal(original, replay):
            return
        tol = tolerance_for(self.settings, names, "int64" if ints else "float64")
        try:
            o, r = float(original), float(replay)
        except OverflowError:  # integers beyond float range: only exact equality counts
            o = r = math.nan
            tol = None
        if tol is not None and not (ints and tol.exact) and is_close(o, r, tol.rtol, tol.atol):
            self.inexact += 1
            return
        self.mismatches += 1
        try:
            abs_diff = abs(r - o) if not ints else float(abs(int(replay) - int(original)))
        except OverflowError:
            abs_diff = math.inf
        self.difference(
            Difference(
                kind="value" if type(original) is type(replay) else "type",
                description=f"{where}: {short_repr(original)} != {short_repr(replay)}"
                + ("" if tol is None else f" (rtol {tol.rtol:g}, atol {tol.atol:g})"),
                key=key or None,
                line=line,
                step=step,
                original=short_repr(original),
                replay=short_repr(replay),
                abs_diff=abs_diff,
                rel_diff=relative(abs_diff, o),
                rtol=None if tol is None else tol.rtol,
                atol=None if tol is None else tol.atol,
            )
        )

    def status(self) -> FileStatus:
        if self.mismatches:
            return "different"
        return "close" if self.inexact else "identical"

    def result(self, path: str, comparator: str) -> FileComparison:
        notes = list(self.notes)
        if self.mapped:
            notes.append(f"{self.mapped} path(s) equal once mapped: {self.paths.describe()}")
        if self.not_compared:
            notes.append(not_compared_text(self.not_compared))
        return FileComparison(
            path=path,
            comparator=comparator,
            status=self.status(),
            first_difference=self.first,
            mismatches=self.mismatches,
            total=self.total,
            unit=self.unit,
            notes=notes,
        )
