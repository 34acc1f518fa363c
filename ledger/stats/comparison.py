"""Comparative claims: does method A beat method B, on one task or on average over several?

Delta = aggregate(A) - aggregate(B) in metric units; the claim says which sign it should have
(``direction`` better or worse, read through ``higher_is_better``) and optionally its size.
With CI the (1 - alpha) interval of Delta:

- supported    : the CI excludes 0 on the claimed side (the direction is significant at alpha,
                 two-sided), and a claimed difference c +- r (r: its rounding) overlaps the CI;
- contradicted : the CI excludes 0 on the other side, or a claimed difference lies outside it;
- inconclusive : neither; ``seeds_needed`` says how many runs per method would settle it;
- insufficient : a method has fewer than 2 runs with a value (per task, for several tasks).

One task: Welch's t-test and its t-interval decide; Mann-Whitney U, the probability of
improvement with a bootstrap CI and a bootstrap CI of Delta are reported beside it. Several
tasks: the interquartile mean over all runs and tasks (rliable's ``aggregate_iqm``) and its
stratified bootstrap CI (runs resampled within each task, independently per method) decide.
Bootstraps draw from ``numpy.random.default_rng(seed)`` and are reproducible from the seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import (
    FloatArray,
    JsonMixin,
    as_sample,
    binary_exponent,
    check_probability,
    unscale,
)
from .twosample import MannWhitneyResult, WelchResult, mann_whitney, seeds_for_difference
from .twosample import welch_test as _welch

__all__ = [
    "MIN_RUNS",
    "ComparisonResult",
    "Interval",
    "TaskComparison",
    "compare_methods",
    "compare_tasks",
    "trimmed_iqm",
]

Sample = Sequence[float] | npt.ArrayLike
Direction = Literal["better", "worse"]
ComparisonVerdict = Literal["supported", "contradicted", "inconclusive", "insufficient"]
TaskAggregate = Literal["iqm", "mean"]

MIN_RUNS = 2  # a spread, hence any test or interval, needs two runs per method
RECOMMENDED_RUNS = 5


@dataclass(frozen=True)
class Interval(JsonMixin):
    estimate: float
    low: float
    high: float
    level: float


@dataclass(frozen=True)
class TaskComparison(JsonMixin):
    task: str
    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    probability_of_improvement: float | None  # P(A better than B) on this task


@dataclass(frozen=True)
class ComparisonResult(JsonMixin):
    """Verdict and evidence of one comparative claim; fields that do not apply are None."""

    verdict: ComparisonVerdict
    reason: str
    direction: Direction
    higher_is_better: bool
    alpha: float
    aggregate: str  # mean (one task) | iqm | mean (several tasks)
    basis: str  # welch | stratified bootstrap
    n_a: int
    n_b: int
    aggregate_a: float | None = None
    aggregate_b: float | None = None
    difference: float | None = None  # aggregate(A) - aggregate(B), metric units
    difference_ci: tuple[float, float] | None = None  # the (1 - alpha) CI that decides
    claimed_difference: float | None = None
    claimed_interval: tuple[float, float] | None = None  # claimed difference +- rounding
    welch: WelchResult | None = None
    mann_whitney: MannWhitneyResult | None = None
    probability_of_improvement: Interval | None = None  # P(A better than B)
    bootstrap_difference: Interval | None = None
    tasks: tuple[TaskComparison, ...] = ()
    seeds_needed: int | None = None  # runs per method (per task) for 80% power
    seeds_needed_basis: str | None = None
    runs_needed: int | None = None  # for insufficient: runs per method (per task) at least
    n_resamples: int = 0
    seed: int = 0


def trimmed_iqm(x: FloatArray, axis: int | None = None) -> FloatArray | float:
    """scipy.stats.trim_mean(x, 0.25): drop floor(n/4) values at each end, average the rest."""
    if axis is None:
        return float(stats.trim_mean(np.asarray(x, dtype=np.float64), 0.25, axis=None))
    s = np.sort(x, axis=axis)
    n = s.shape[axis]
    k = int(0.25 * n)
    middle = np.take(s, np.arange(k, n - k), axis=axis)
    out: FloatArray = middle.mean(axis=axis)
    return out


def compare_methods(
    a: Sample,
    b: Sample,
    *,
    higher_is_better: bool = True,
    direction: Direction = "better",
    difference: float | None = None,
    difference_decimals: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    n_resamples: int = 10_000,
    seed: int = 0,
    labels: tuple[str, str] = ("A", "B"),
) -> ComparisonResult:
    """Method A's runs against method B's on one metric of one task (Welch decides)."""
    alpha = check_probability(alpha, "alpha")
    x, y = _values(a, "a"), _values(b, "b")
    head = _head(direction, higher_is_better, alpha, "mean", "welch", x.size, y.size, seed)
    if x.size < MIN_RUNS or y.size < MIN_RUNS:
        return _insufficient(head, {labels[0]: x.size, labels[1]: y.size})
    _check_resampling(n_resamples, seed)
    claimed = _claimed(difference, difference_decimals)
    w = _welch(x, y, level=1 - alpha)
    sign = 1.0 if higher_is_better else -1.0
    mw = mann_whitney(sign * x, sign * y)  # oriented: U counts A better than B
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples)
    pois = np.empty(n_resamples)
    e = binary_exponent(x, y)  # bootstrap means of scaled values cannot overflow
    xs, ys = np.ldexp(x, -e), np.ldexp(y, -e)
    for start, k in _chunks(n_resamples, x.size * y.size):
        xa, yb = _resample(rng, xs, k), _resample(rng, ys, k)
        diffs[start : start + k] = xa.mean(axis=1) - yb.mean(axis=1)
        pois[start : start + k] = _poi_rows(sign * xa, sign * yb)
    diffs = _unscale_all(diffs, e)
    verdict, reason = _decide(w.ci, _expected_sign(direction, higher_is_better), claimed, alpha)
    needed = basis = None
    if verdict == "inconclusive":
        sigma = math.hypot(w.std_a, w.std_b) / math.sqrt(2)  # no overflow nor underflow
        effect, basis = _effect(claimed, w.difference)
        if sigma > 0:
            needed = seeds_for_difference(effect, sigma, alpha=alpha, power=power)
            basis += f", pooled sd {sigma:.4g}, two-sided t-test at alpha {alpha:g}"
    return ComparisonResult(
        **head,
        verdict=verdict,
        reason=reason,
        aggregate_a=w.mean_a,
        aggregate_b=w.mean_b,
        difference=w.difference,
        difference_ci=w.ci,
        claimed_difference=None if claimed is None else difference,
        claimed_interval=claimed,
        welch=w,
        mann_whitney=mw,
        probability_of_improvement=_interval(mw.probability, pois, alpha),
        bootstrap_difference=_interval(w.difference, diffs, alpha),
        seeds_needed=needed,
        seeds_needed_basis=basis if needed is not None else None,
        n_resamples=n_resamples,
    )


def compare_tasks(
    a: Mapping[str, Sample],
    b: Mapping[str, Sample],
    *,
    higher_is_better: bool = True,
    direction: Direction = "better",
    difference: float | None = None,
    difference_decimals: int | None = None,
    aggregate: TaskAggregate = "iqm",
    alpha: float = 0.05,
    power: float = 0.8,
    n_resamples: int = 10_000,
    seed: int = 0,
    labels: tuple[str, str] = ("A", "B"),
) -> ComparisonResult:
    """Several tasks: the IQM (or mean) over all runs and tasks, stratified bootstrap CI.

    ``a`` and ``b`` map each task to that method's run values; both must name the same tasks.
    ``labels`` name the two methods in the reason of an ``insufficient`` verdict.
    """
    alpha = check_probability(alpha, "alpha")
    if aggregate not in ("iqm", "mean"):
        raise ValueError(f"aggregate must be 'iqm' or 'mean', got {aggregate!r}")
    if set(a) != set(b) or not a:
        raise ValueError(f"a and b must name the same tasks, got {sorted(a)} and {sorted(b)}")
    tasks = sorted(a)
    xs = {t: _values(a[t], f"a[{t!r}]") for t in tasks}
    ys = {t: _values(b[t], f"b[{t!r}]") for t in tasks}
    # Everything below runs on exactly scaled values (no overflow, no underflow); results in
    # metric units are scaled back with unscale.
    e = binary_exponent(*xs.values(), *ys.values())
    xs = {t: np.ldexp(v, -e) for t, v in xs.items()}
    ys = {t: np.ldexp(v, -e) for t, v in ys.items()}
    n_a, n_b = sum(v.size for v in xs.values()), sum(v.size for v in ys.values())
    head = _head(
        direction, higher_is_better, alpha, aggregate, "stratified bootstrap", n_a, n_b, seed
    )
    sign = 1.0 if higher_is_better else -1.0
    per_task = tuple(
        TaskComparison(
            task=t,
            n_a=int(xs[t].size),
            n_b=int(ys[t].size),
            mean_a=unscale(float(xs[t].mean()), e) if xs[t].size else None,
            mean_b=unscale(float(ys[t].mean()), e) if ys[t].size else None,
            probability_of_improvement=(
                mann_whitney(sign * xs[t], sign * ys[t]).probability
                if xs[t].size and ys[t].size
                else None
            ),
        )
        for t in tasks
    )
    short = {
        f"{side} on {t}": v.size
        for t in tasks
        for side, v in ((labels[0], xs[t]), (labels[1], ys[t]))
        if v.size < MIN_RUNS
    }
    if short:
        return _insufficient(head, short, tasks=per_task)
    _check_resampling(n_resamples, seed)
    claimed = _claimed(difference, difference_decimals)
    agg = _aggregate_rows if aggregate == "iqm" else _mean_rows
    pooled_a = np.concatenate([xs[t] for t in tasks])
    pooled_b = np.concatenate([ys[t] for t in tasks])
    point_a = unscale(float(agg(pooled_a[None, :])[0]), e)
    point_b = unscale(float(agg(pooled_b[None, :])[0]), e)
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples)
    pois = np.empty(n_resamples)
    widest = max(xs[t].size * ys[t].size for t in tasks)
    for start, k in _chunks(n_resamples, max(widest, n_a + n_b)):
        ra = [_resample(rng, xs[t], k) for t in tasks]
        rb = [_resample(rng, ys[t], k) for t in tasks]
        diffs[start : start + k] = agg(np.concatenate(ra, axis=1)) - agg(np.concatenate(rb, axis=1))
        pois[start : start + k] = np.mean(
            [_poi_rows(sign * p, sign * q) for p, q in zip(ra, rb, strict=True)], axis=0
        )
    difference_point = unscale(
        float(agg(pooled_a[None, :])[0]) - float(agg(pooled_b[None, :])[0]), e
    )
    scaled_se = float(np.std(diffs, ddof=1))
    diffs = _unscale_all(diffs, e)
    ci = _percentile(diffs, alpha)
    verdict, reason = _decide(ci, _expected_sign(direction, higher_is_better), claimed, alpha)
    needed = basis = None
    if verdict == "inconclusive":
        se = unscale(scaled_se, e)
        effect, basis = _effect(claimed, difference_point)
        n_now = min(min(xs[t].size, ys[t].size) for t in tasks)
        if se > 0 and effect != 0:
            z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
            needed = max(n_now + 1, math.ceil(n_now * (z * se / abs(effect)) ** 2))
            basis += (
                f", bootstrap se {se:.4g} at {n_now} runs per task shrinking as 1/sqrt(n) "
                "(normal approximation)"
            )
    poi_point = float(np.mean([p.probability_of_improvement or 0.0 for p in per_task]))
    return ComparisonResult(
        **head,
        verdict=verdict,
        reason=reason,
        aggregate_a=point_a,
        aggregate_b=point_b,
        difference=difference_point,
        difference_ci=ci,
        claimed_difference=None if claimed is None else difference,
        claimed_interval=claimed,
        probability_of_improvement=_interval(poi_point, pois, alpha),
        bootstrap_difference=Interval(difference_point, ci[0], ci[1], 1 - alpha),
        tasks=per_task,
        seeds_needed=needed,
        seeds_needed_basis=basis if needed is not None else None,
        n_resamples=n_resamples,
    )


def _head(
    direction: Direction,
    higher_is_better: bool,
    alpha: float,
    aggregate: str,
    basis: str,
    n_a: int,
    n_b: int,
    seed: int,
) -> dict[str, Any]:
    if direction not in ("better", "worse"):
        raise ValueError(f"direction must be 'better' or 'worse', got {direction!r}")
    return {
        "direction": direction,
        "higher_is_better": bool(higher_is_better),
        "alpha": alpha,
        "aggregate": aggregate,
        "basis": basis,
        "n_a": int(n_a),
        "n_b": int(n_b),
        "seed": int(seed),
    }


def _values(x: Sample, name: str) -> FloatArray:
    arr = np.asarray(x, dtype=np.float64)
    return as_sample(arr, name) if arr.size else arr.reshape(0)


def _insufficient(
    head: dict[str, Any], short: dict[str, int], tasks: tuple[TaskComparison, ...] = ()
) -> ComparisonResult:
    have = ", ".join(f"{k}: {n}" for k, n in short.items() if n < MIN_RUNS)
    reason = (
        f"too few runs with a value ({have}); a comparison needs at least {MIN_RUNS} runs per "
        f"method{' and task' if tasks else ''}, {RECOMMENDED_RUNS} or more recommended"
    )
    return ComparisonResult(
        **head,
        verdict="insufficient",
        reason=reason,
        tasks=tasks,
        runs_needed=MIN_RUNS,
    )


def _check_resampling(n_resamples: int, seed: int) -> None:
    if not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100, got {n_resamples!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _claimed(difference: float | None, decimals: int | None) -> tuple[float, float] | None:
    if difference is None:
        return None
    d = float(difference)
    if not math.isfinite(d):
        raise ValueError(f"difference must be finite, got {difference!r}")
    r = 0.5 * 10.0 ** -(decimals if decimals is not None else 12)
    return (d - r, d + r)


def _expected_sign(direction: Direction, higher_is_better: bool) -> int:
    """The sign Delta = A - B must have for "A is ``direction`` than B"."""
    better = 1 if higher_is_better else -1
    return better if direction == "better" else -better


def _decide(
    ci: tuple[float, float], expected: int, claimed: tuple[float, float] | None, alpha: float
) -> tuple[ComparisonVerdict, str]:
    lo, hi = ci
    level = f"{100 * (1 - alpha):g}% CI"
    shown = f"[{lo:.4g}, {hi:.4g}]"
    if claimed is not None and (claimed[1] < lo or claimed[0] > hi):
        return "contradicted", (
            f"the claimed difference ({claimed[0]:.6g} to {claimed[1]:.6g} with rounding) lies "
            f"outside the {level} of the difference {shown}"
        )
    on_side = lo > 0 if expected > 0 else hi < 0
    against = hi < 0 if expected > 0 else lo > 0
    if on_side:
        extra = ", which holds the claimed difference" if claimed is not None else ""
        return (
            "supported",
            f"the {level} of the difference {shown} excludes 0 on the claimed side{extra}",
        )
    if against:
        return "contradicted", (
            f"the {level} of the difference {shown} excludes 0 on the opposite side: "
            "significant in the other direction"
        )
    return "inconclusive", f"the {level} of the difference {shown} includes 0"


def _effect(claimed: tuple[float, float] | None, observed: float) -> tuple[float, str]:
    if claimed is not None:
        return (claimed[0] + claimed[1]) / 2, "to detect the claimed difference"
    return observed, f"to detect the observed difference {observed:.4g}"


def _unscale_all(values: FloatArray, e: int) -> FloatArray:
    with np.errstate(over="ignore", under="ignore"):
        out: FloatArray = np.ldexp(values, e)
    return out


def _interval(point: float, draws: FloatArray, alpha: float) -> Interval:
    lo, hi = _percentile(draws, alpha)
    return Interval(float(point), lo, hi, 1 - alpha)


def _percentile(draws: FloatArray, alpha: float) -> tuple[float, float]:
    q = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(q[0]), float(q[1])


def _chunks(total: int, width: int) -> list[tuple[int, int]]:
    """Replicates per step so that a step's pairwise comparisons stay near 4M elements."""
    step = max(1, min(total, 4_000_000 // max(width, 1)))
    return [(s, min(step, total - s)) for s in range(0, total, step)]


def _resample(rng: np.random.Generator, x: FloatArray, k: int) -> FloatArray:
    out: FloatArray = x[rng.integers(0, x.size, size=(k, x.size))]
    return out


def _poi_rows(x: FloatArray, y: FloatArray) -> FloatArray:
    """P(X > Y) per row, ties counting one half: U / (n_x n_y)."""
    gt = (x[:, :, None] > y[:, None, :]).sum(axis=(1, 2))
    eq = (x[:, :, None] == y[:, None, :]).sum(axis=(1, 2))
    out: FloatArray = (gt + 0.5 * eq) / (x.shape[1] * y.shape[1])
    return out


def _aggregate_rows(x: FloatArray) -> FloatArray:
    out = trimmed_iqm(x, axis=1)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"a trimmed IQM along an axis came as {type(out).__name__}")
    return out


def _mean_rows(x: FloatArray) -> FloatArray:
    out: FloatArray = x.mean(axis=1)
    return out
