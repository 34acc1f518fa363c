"""Bound claims: "the final loss is below 3.0", over one run or the mean of several.

A bound is a threshold, not a printed measurement: no rounding interval, and strict (a value
equal to the bound is not below it). Over several runs the claim is read as a claim about the
mean, as the paper's own number is (docs/explanation/statistics.md, "Bound claims"):

- one run       : supported iff its value lies on the claimed side of the bound;
- several runs  : supported when the 90% t-CI of the mean lies on the claimed side (the
                  one-sided 95% bound of the mean clears it); not supported when the 95% CI
                  lies entirely on the other side (or touches the bound); inconclusive
                  otherwise, with the seeds a one-sided t-test would need at 80% power.

How many runs clear the bound on their own is reported beside the verdict, never inside it:
"every run" would turn more seeds into more chances to fail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import JsonMixin, as_sample, check_probability
from .power import MAX_SEEDS

__all__ = ["BoundVerdict", "bound_seeds_needed", "bound_verdict"]

Side = Literal["below", "above"]
Verdict = Literal["supported", "not_supported", "inconclusive"]


@dataclass(frozen=True)
class BoundVerdict(JsonMixin):
    """Verdict on "below / above ``bound``" from the runs' values, with what it rests on."""

    verdict: Verdict
    side: Side
    bound: float
    exceeds: bool  # not supported because the runs lie above the bound
    n: int
    mean: float
    std: float | None  # None for one run
    ci90: tuple[float, float] | None
    ci95: tuple[float, float] | None
    runs_on_side: int  # runs whose own value is on the claimed side
    seeds_needed: int | None
    evidence: tuple[str, ...]


def bound_verdict(
    values: Sequence[float] | npt.ArrayLike, *, bound: float, side: Side, power: float = 0.8
) -> BoundVerdict:
    """Supported / not supported / inconclusive for "the value is ``side`` ``bound``"."""
    x = as_sample(values, "values")
    if not math.isfinite(bound):
        raise ValueError(f"bound must be a finite number, got {bound!r}")
    if side not in ("below", "above"):
        raise ValueError(f"side must be 'below' or 'above', got {side!r}")
    n, m = int(x.size), float(np.mean(x))
    on_side = int(np.sum(x < bound) if side == "below" else np.sum(x > bound))
    counted = f"{on_side} of {n} run(s) {side} {bound:g} on their own"
    if n == 1:
        verdict: Verdict = "supported" if on_side == 1 else "not_supported"
        word = "" if on_side == 1 else "not "
        return BoundVerdict(
            verdict=verdict,
            side=side,
            bound=float(bound),
            exceeds=verdict == "not_supported" and side == "below",
            n=1,
            mean=m,
            std=None,
            ci90=None,
            ci95=None,
            runs_on_side=on_side,
            seeds_needed=None,
            evidence=(f"one run: {m:.6g} is {word}{side} {bound:g}",),
        )
    s = float(np.std(x, ddof=1))
    ci90, ci95 = _mean_ci(m, s, n, 0.90), _mean_ci(m, s, n, 0.95)
    if side == "below":
        supported, refuted, gap = ci90[1] < bound, ci95[0] >= bound, bound - m
    else:
        supported, refuted, gap = ci90[0] > bound, ci95[1] <= bound, m - bound
    needed = None
    if supported:
        verdict = "supported"
        line = f"90% CI {_fmt(ci90)} of the mean lies {side} {bound:g}"
    elif refuted:
        verdict = "not_supported"
        line = f"95% CI {_fmt(ci95)} of the mean is not {side} {bound:g} at any point"
    else:
        verdict = "inconclusive"
        line = f"90% CI {_fmt(ci90)} of the mean reaches past {bound:g}"
        if gap > 0 and s > 0:
            needed = bound_seeds_needed(gap, s, power=power)
    return BoundVerdict(
        verdict=verdict,
        side=side,
        bound=float(bound),
        exceeds=verdict == "not_supported" and side == "below",
        n=n,
        mean=m,
        std=s,
        ci90=ci90,
        ci95=ci95,
        runs_on_side=on_side,
        seeds_needed=needed,
        evidence=(f"{n} runs: mean {m:.6g}, std {s:.4g}", counted, line),
    )


def bound_seeds_needed(
    gap: float, sigma: float, *, power: float = 0.8, alpha: float = 0.05
) -> int | None:
    """Smallest n whose one-sided one-sample t-test at level ``alpha`` shows a mean ``gap``
    inside the bound with ``power`` (sd ``sigma``); None past MAX_SEEDS."""
    check_probability(power, "power")
    if not (math.isfinite(gap) and gap > 0 and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"gap and sigma must be positive finite numbers, got {gap!r}, {sigma!r}")

    def reaches(n: int) -> bool:
        crit = float(stats.t.ppf(1 - alpha, n - 1))
        return float(stats.nct.sf(crit, n - 1, gap / sigma * math.sqrt(n))) >= power

    lo, hi = 2, 4
    if reaches(lo):
        return lo
    while not reaches(hi):
        if hi >= MAX_SEEDS:
            return None
        lo, hi = hi, min(hi * 2, MAX_SEEDS)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _mean_ci(m: float, s: float, n: int, level: float) -> tuple[float, float]:
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * s / math.sqrt(n)
    return (m - half, m + half)


def _fmt(interval: tuple[float, float]) -> str:
    return f"({interval[0]:.6g}, {interval[1]:.6g})"
