"""Compare two runs' scalar series (metric, step) -> value for a tolerance replay.

Series are aligned by (metric, step) key, never by position: a logging call added or dropped in
one run would otherwise shift every later value and hide where the runs really part. A key present
in only one run is a *structural* divergence; a key in both whose values are not close is a
*value* divergence. The first divergence is the smallest step with a value mismatch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._common import JsonMixin, JsonValue, to_jsonable
from .tolerance import Tolerance, default_tolerance, is_close, normalize_dtype

__all__ = [
    "MetricComparison",
    "SeriesComparison",
    "StructuralDivergence",
    "ValueDivergence",
    "compare_series",
]

Key = tuple[str, int]
Number = float | int | bool

_STRUCTURAL_IN_JSON = 20


@dataclass(frozen=True)
class ValueDivergence(JsonMixin):
    """A (metric, step) present in both runs whose values are not close."""

    metric: str
    step: int
    original: float
    replay: float
    abs_diff: float
    rel_diff: float
    rtol: float
    atol: float


@dataclass(frozen=True)
class StructuralDivergence(JsonMixin):
    """A (metric, step) logged by only one of the two runs."""

    metric: str
    step: int
    present_in: Literal["original", "replay"]


@dataclass(frozen=True)
class MetricComparison(JsonMixin):
    """Per-metric counts, the tolerance used and where the largest difference was."""

    metric: str
    dtype: str
    rtol: float
    atol: float
    compared: int
    mismatches: int
    missing_in_replay: int
    missing_in_original: int
    first_mismatch_step: int | None
    max_abs_diff: float | None
    max_abs_diff_step: int | None


@dataclass(frozen=True)
class SeriesComparison(JsonMixin):
    """Outcome of :func:`compare_series`; ``ok`` only if no value and no structural divergence."""

    ok: bool
    compared: int
    total_keys: int
    mismatches: int
    first_divergence: ValueDivergence | None
    first_structural: StructuralDivergence | None
    structural_count: int
    metrics: tuple[MetricComparison, ...]
    structural: tuple[StructuralDivergence, ...] = field(repr=False)

    def to_json(self) -> dict[str, JsonValue]:
        """All fields, with the structural list cut to its first few entries."""
        out = super().to_json()
        out["structural"] = to_jsonable(self.structural[:_STRUCTURAL_IN_JSON])
        out["structural_truncated"] = len(self.structural) > _STRUCTURAL_IN_JSON
        return out


def compare_series(
    original: Mapping[Key, Number],
    replay: Mapping[Key, Number],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    overrides: Mapping[str, Tolerance] | None = None,
    dtypes: Mapping[str, Any] | None = None,
    default_dtype: Any = "float64",
) -> SeriesComparison:
    """Align ``original`` and ``replay`` by (metric, step) and compare each shared value.

    The tolerance of a metric is, in order of precedence: ``overrides[metric]``; the global
    ``rtol``/``atol`` (give both or neither); the default of its dtype (``dtypes[metric]``, else
    ``default_dtype``; Python floats are fp64). Integer and boolean dtypes compare exactly.
    """
    _check_keys(original, "original")
    _check_keys(replay, "replay")
    if (rtol is None) != (atol is None):
        raise ValueError("give both rtol and atol, or neither (to use the dtype defaults)")
    global_tol = Tolerance(rtol, atol) if rtol is not None and atol is not None else None
    overrides = overrides or {}
    dtypes = dtypes or {}

    metric_names = sorted({m for m, _ in original} | {m for m, _ in replay})
    per_metric: dict[str, _Tally] = {}
    for name in metric_names:
        dtype = normalize_dtype(dtypes.get(name, default_dtype))
        tol = overrides.get(name) or global_tol or default_tolerance(dtype)
        per_metric[name] = _Tally(name, dtype, tol)

    first: ValueDivergence | None = None
    structural: list[StructuralDivergence] = []
    for key in sorted(original.keys() | replay.keys(), key=lambda k: (k[1], k[0])):
        metric, step = key
        tally = per_metric[metric]
        if key not in replay:
            tally.missing_in_replay += 1
            structural.append(StructuralDivergence(metric, step, "original"))
            continue
        if key not in original:
            tally.missing_in_original += 1
            structural.append(StructuralDivergence(metric, step, "replay"))
            continue
        divergence = tally.add(step, original[key], replay[key])
        if divergence is not None and first is None:
            first = divergence

    metrics = tuple(t.result() for t in per_metric.values())
    mismatches = sum(m.mismatches for m in metrics)
    return SeriesComparison(
        ok=mismatches == 0 and not structural,
        compared=sum(m.compared for m in metrics),
        total_keys=len(original.keys() | replay.keys()),
        mismatches=mismatches,
        first_divergence=first,
        first_structural=structural[0] if structural else None,
        structural_count=len(structural),
        metrics=metrics,
        structural=tuple(structural),
    )


class _Tally:
    """Running per-metric counts while walking the keys in step order."""

    def __init__(self, metric: str, dtype: str, tol: Tolerance) -> None:
        self.metric, self.dtype, self.tol = metric, dtype, tol
        self.compared = self.mismatches = 0
        self.missing_in_replay = self.missing_in_original = 0
        self.first_mismatch_step: int | None = None
        self.max_abs_diff: float | None = None
        self.max_abs_diff_step: int | None = None

    def add(self, step: int, orig: Number, rep: Number) -> ValueDivergence | None:
        self.compared += 1
        magnitude = _magnitude(orig, rep)
        if self.max_abs_diff is None or magnitude > self.max_abs_diff:
            self.max_abs_diff, self.max_abs_diff_step = magnitude, step
        if _values_close(orig, rep, self.tol):
            return None
        self.mismatches += 1
        if self.first_mismatch_step is None:
            self.first_mismatch_step = step
        abs_diff = abs(float(rep) - float(orig))
        return ValueDivergence(
            metric=self.metric,
            step=step,
            original=float(orig),
            replay=float(rep),
            abs_diff=abs_diff,
            rel_diff=_relative(abs_diff, float(orig)),
            rtol=self.tol.rtol,
            atol=self.tol.atol,
        )

    def result(self) -> MetricComparison:
        return MetricComparison(
            metric=self.metric,
            dtype=self.dtype,
            rtol=self.tol.rtol,
            atol=self.tol.atol,
            compared=self.compared,
            mismatches=self.mismatches,
            missing_in_replay=self.missing_in_replay,
            missing_in_original=self.missing_in_original,
            first_mismatch_step=self.first_mismatch_step,
            max_abs_diff=self.max_abs_diff,
            max_abs_diff_step=self.max_abs_diff_step,
        )


def _check_keys(series: Mapping[Key, Number], name: str) -> None:
    for key in series:
        ok = (
            isinstance(key, tuple)
            and len(key) == 2
            and isinstance(key[0], str)
            and isinstance(key[1], numbers.Integral)
            and not isinstance(key[1], bool)
        )
        if not ok:
            raise ValueError(f"{name} keys must be (metric: str, step: int) tuples, got {key!r}")
        value = series[key]
        if not isinstance(value, numbers.Real):
            raise ValueError(f"{name}[{key!r}] must be a real number, got {value!r}")


def _values_close(orig: Number, rep: Number, tol: Tolerance) -> bool:
    # Large integers lose digits as floats, so exact integer metrics compare as integers.
    if tol.exact and isinstance(orig, numbers.Integral) and isinstance(rep, numbers.Integral):
        return int(orig) == int(rep)
    return is_close(float(orig), float(rep), tol.rtol, tol.atol)


def _magnitude(orig: Number, rep: Number) -> float:
    """|rep - orig| for ranking differences: 0 for NaN/NaN or equal values, inf if NaN vs number."""
    o, r = float(orig), float(rep)
    if o == r or (math.isnan(o) and math.isnan(r)):
        return 0.0
    d = abs(r - o)
    return math.inf if math.isnan(d) else d


def _relative(abs_diff: float, orig: float) -> float:
    if orig == 0 or math.isinf(orig):
        return 0.0 if abs_diff == 0 else math.inf
    return abs_diff / abs(orig)
