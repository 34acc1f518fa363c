"""Claim audits: does a set of replicated seeds support a published "c +- s (n seeds)" claim?

A reported value c with ``decimals`` digits stands for the interval [c - r, c + r],
r = 0.5 * 10**-decimals, so the verdict rules widen or narrow the margin delta by r:

- supported     : the 90% CI of the replicated mean lies inside [c + r - delta, c - r + delta];
- not supported : the 95% CI lies entirely outside [c - r - delta, c + r + delta]
                  (``exceeds`` when it lies above);
- inconclusive  : neither; the result says how many seeds would settle it.

A claim about one run (no spread, n_seeds 1 or one run found) has no interval to test: it is
judged by :func:`single_run_verdict`, the recorded value against [c - r - delta, c + r + delta]
(delta 0 unless given): supported inside, not supported outside.

"Not reproducible" (runs cannot be replayed, the claim lacks n, spread type or split, or the
consistency checks fail) is decided by the audit layer from :func:`check_consistency` and the
replay results; this module only computes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import integrate, special, stats

from ._common import JsonMixin, as_sample, check_margin, check_probability
from .equivalence import TostResult, welch_tost_from_stats
from .power import seeds_needed

__all__ = [
    "ClaimVerdict",
    "ConsistencyCheck",
    "ConsistencyReport",
    "SingleRunVerdict",
    "check_consistency",
    "claim_tost",
    "claim_verdict",
    "combine_verdicts",
    "expected_range",
    "rounding_halfwidth",
    "sigma_readings",
    "single_run_verdict",
    "spread_to_sigma",
]

Sample = Sequence[float] | npt.ArrayLike
SpreadType = Literal["std", "sem", "ci", "range", "unspecified"]
Aggregate = Literal["mean", "median", "iqm", "max"]
Verdict = Literal["supported", "not_supported", "inconclusive"]


def rounding_halfwidth(decimals: int) -> float:
    """r = 0.5 * 10**-decimals: how far the true value may sit from the printed one."""
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise ValueError(f"decimals must be an integer, got {decimals!r}")
    return 0.5 * 10.0**-decimals


def expected_range(n: int) -> float:
    """d2(n): expected max - min of n standard normal draws (Tippett), to read a range as sigma."""
    _check_n(n)

    def integrand(x: float) -> float:
        return float(1 - np.exp(n * special.log_ndtr(x)) - np.exp(n * special.log_ndtr(-x)))

    value, _ = integrate.quad(integrand, -np.inf, np.inf)
    return float(value)


def spread_to_sigma(
    spread: float, spread_type: SpreadType, n: int, *, level: float = 0.95
) -> float:
    """The standard deviation implied by a reported spread over ``n`` seeds.

    ``spread`` is the number printed after "+-": std as is; sem * sqrt(n); a t-based CI
    half-width hw * sqrt(n) / t((1 + level) / 2, n - 1); a range is read as +- half of
    max - min, so sigma = 2 * spread / d2(n). "unspecified" has two readings: use
    :func:`sigma_readings`.
    """
    _check_n(n)
    if not math.isfinite(spread) or spread < 0:
        raise ValueError(f"spread must be a finite number >= 0, got {spread!r}")
    if spread_type == "std":
        return float(spread)
    if spread_type == "sem":
        return float(spread * math.sqrt(n))
    if spread_type == "ci":
        level = check_probability(level, "level")
        return float(spread * math.sqrt(n) / stats.t.ppf((1 + level) / 2, n - 1))
    if spread_type == "range":
        return float(2 * spread / expected_range(n))
    if spread_type == "unspecified":
        raise ValueError("an unspecified spread has two readings (std, sem); use sigma_readings")
    raise ValueError(f"unknown spread type {spread_type!r}; expected std, sem, ci, range")


def sigma_readings(
    spread: float, spread_type: SpreadType, n: int, *, level: float = 0.95
) -> dict[str, float]:
    """Every sigma the claim could mean: {"std": .., "sem": ..} if unspecified, else one entry."""
    if spread_type == "unspecified":
        return {t: spread_to_sigma(spread, t, n) for t in ("std", "sem")}
    return {spread_type: spread_to_sigma(spread, spread_type, n, level=level)}


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """One verdict from several readings of the same claim: agreement or inconclusive."""
    if not verdicts:
        raise ValueError("need at least one verdict to combine")
    return verdicts[0] if len(set(verdicts)) == 1 else "inconclusive"


@dataclass(frozen=True)
class ConsistencyCheck(JsonMixin):
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class ConsistencyReport(JsonMixin):
    """Do the recorded runs produce the numbers the claim prints? ``readings`` are spreads."""

    ok: bool
    checks: tuple[ConsistencyCheck, ...]
    recorded_n: int
    recorded_value: float
    readings: dict[str, float]
    matching_readings: tuple[str, ...]


def check_consistency(
    values: Sample,
    *,
    value: float,
    decimals: int,
    spread: float,
    spread_type: SpreadType,
    n_seeds: int,
    aggregate: Aggregate = "mean",
    higher_is_better: bool = True,
    spread_decimals: int | None = None,
    level: float = 0.95,
) -> ConsistencyReport:
    """Check the recorded seed values against the claim's own numbers.

    n matches; the recorded aggregate rounds to c; the spread reading of the declared type
    (std at ddof 1 or 0, sem, t-CI half-width, half range) rounds to the claimed spread; the
    claim is not simply the best seed. ``spread_decimals`` defaults to ``decimals``. "Rounds to"
    means within half a unit of the last digit, boundary included.
    """
    x = as_sample(values, "values")
    n = int(x.size)
    recorded = _aggregate(x, aggregate)
    spread_digits = decimals if spread_decimals is None else spread_decimals
    digits = max(decimals, 0)
    checks = [
        ConsistencyCheck("n_matches", n == n_seeds, f"{n} recorded runs, claim says {n_seeds}"),
        ConsistencyCheck(
            "value_rounds",
            _rounds_to(recorded, value, decimals),
            f"recorded {aggregate} {recorded:.{digits + 3}f}, claim {value:.{digits}f}",
        ),
    ]
    readings = _readings(x, spread_type, level)
    matching = tuple(k for k, v in readings.items() if _rounds_to(v, spread, spread_digits))
    allowed = {
        "std": ("std_ddof1", "std_ddof0"),
        "sem": ("sem",),
        "ci": ("ci",),
        "range": ("range",),
        "unspecified": ("std_ddof1", "std_ddof0", "sem"),
    }[spread_type]
    shown = ", ".join(f"{k} {v:.4g}" for k, v in readings.items()) or "none (one run)"
    checks.append(
        ConsistencyCheck(
            "spread_rounds",
            any(k in allowed for k in matching),
            f"claimed {spread_type} {spread}; recorded {shown}; matching: "
            + (", ".join(matching) or "none"),
        )
    )
    checks.append(_best_seed_check(x, recorded, value, decimals, aggregate, higher_is_better))
    return ConsistencyReport(
        ok=all(c.passed for c in checks),
        checks=tuple(checks),
        recorded_n=n,
        recorded_value=recorded,
        readings=readings,
        matching_readings=matching,
    )


@dataclass(frozen=True)
class ClaimVerdict(JsonMixin):
    """Verdict on a claimed value from replicated seeds, with the intervals it rests on."""

    verdict: Verdict
    exceeds: bool
    claim_value: float
    rounding: float
    margin: float
    support_interval: tuple[float, float]
    refute_interval: tuple[float, float]
    n: int
    mean: float
    std: float
    ci90: tuple[float, float]
    ci95: tuple[float, float]
    seeds_needed: int | None
    evidence: tuple[str, ...]


def claim_verdict(
    values: Sample, *, value: float, decimals: int, margin: float, power: float = 0.8
) -> ClaimVerdict:
    """Supported / not supported / inconclusive for claim ``value`` from replicated ``values``.

    Uses the one-sample t CI of the replicated mean. ``margin`` must exceed the rounding
    half-width r, or no replication could ever support the claim.
    """
    x = as_sample(values, "values", min_n=2)
    margin = check_margin(margin)
    r = rounding_halfwidth(decimals)
    if margin <= r:
        raise ValueError(
            f"margin {margin} must be larger than the rounding half-width r = {r} of a value "
            f"printed with {decimals} decimals, or no replication can support the claim"
        )
    n, m, s = int(x.size), float(np.mean(x)), float(np.std(x, ddof=1))
    ci90, ci95 = _mean_ci(m, s, n, 0.90), _mean_ci(m, s, n, 0.95)
    support = (value + r - margin, value - r + margin)
    refute = (value - r - margin, value + r + margin)
    exceeds = ci95[0] > refute[1]
    needed = None
    if support[0] < ci90[0] and ci90[1] < support[1]:
        verdict: Verdict = "supported"
        evidence = f"90% CI {_fmt(ci90)} of the replicated mean lies inside {_fmt(support)}"
    elif exceeds or ci95[1] < refute[0]:
        verdict = "not_supported"
        where = "above" if exceeds else "below"
        evidence = f"95% CI {_fmt(ci95)} of the replicated mean lies {where} {_fmt(refute)}"
    else:
        verdict = "inconclusive"
        evidence = (
            f"90% CI {_fmt(ci90)} is not inside {_fmt(support)} and 95% CI {_fmt(ci95)} "
            f"is not outside {_fmt(refute)}"
        )
        if s > 0:
            needed = seeds_needed(margin - r, s, power=power, design="one-sample")
    return ClaimVerdict(
        verdict=verdict,
        exceeds=exceeds,
        claim_value=float(value),
        rounding=r,
        margin=margin,
        support_interval=support,
        refute_interval=refute,
        n=n,
        mean=m,
        std=s,
        ci90=ci90,
        ci95=ci95,
        seeds_needed=needed,
        evidence=(
            f"{n} replicated seeds: mean {m:.6g}, std {s:.4g}",
            f"claim {value} +- rounding {r:g}, margin {margin:g}",
            evidence,
        ),
    )


@dataclass(frozen=True)
class SingleRunVerdict(JsonMixin):
    """Verdict on a claimed value from the one run behind it: its rounding, nothing more."""

    verdict: Literal["supported", "not_supported"]
    exceeds: bool
    recorded: float
    claim_value: float
    rounding: float
    margin: float
    interval: tuple[float, float]
    evidence: tuple[str, ...]


def single_run_verdict(
    recorded: float, *, value: float, decimals: int, margin: float = 0.0
) -> SingleRunVerdict:
    """Supported when the one recorded value lies within the claim's rounding half-width r
    (plus ``margin``, default 0) of the claimed ``value``, boundary included; otherwise not
    supported, ``exceeds`` when it lies above. 2.8217 supports "2.82"; 2.82 refutes "1.50"."""
    if not math.isfinite(recorded):
        raise ValueError(f"recorded must be a finite number, got {recorded!r}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    r = rounding_halfwidth(decimals)
    interval = (value - r - margin, value + r + margin)
    inside = _within(recorded, value, r + margin)
    widened = f" + margin {margin:g}" if margin else ""
    if inside:
        line = f"one run: {recorded:.6g} lies within {_fmt(interval)}, {value} ± rounding {r:g}"
    else:
        line = f"one run: {recorded:.6g} lies outside {_fmt(interval)}, {value} ± rounding {r:g}"
    return SingleRunVerdict(
        verdict="supported" if inside else "not_supported",
        exceeds=not inside and recorded > value,
        recorded=float(recorded),
        claim_value=float(value),
        rounding=r,
        margin=float(margin),
        interval=interval,
        evidence=(line + widened,),
    )


def claim_tost(
    values: Sample, *, value: float, sigma: float, n: int, margin: float, power: float = 0.8
) -> TostResult:
    """Welch TOST of recorded seeds against the claim taken as a group (mean c, sd sigma, n).

    Delta = mean(values) - c. No rounding adjustment: a cross-check of the claimed spread, not
    the verdict (see :func:`claim_verdict`).
    """
    x = as_sample(values, "values", min_n=2)
    if not math.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
    return welch_tost_from_stats(
        float(value),
        float(sigma),
        n,
        float(np.mean(x)),
        float(np.std(x, ddof=1)),
        int(x.size),
        margin=margin,
        power=power,
    )


def _check_n(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ValueError(f"n must be an integer >= 2 to speak of a spread, got {n!r}")


def _aggregate(x: npt.NDArray[np.float64], aggregate: Aggregate) -> float:
    if aggregate == "mean":
        return float(np.mean(x))
    if aggregate == "median":
        return float(np.median(x))
    if aggregate == "iqm":
        return float(stats.trim_mean(x, 0.25))
    if aggregate == "max":
        return float(np.max(x))
    raise ValueError(f"unknown aggregate {aggregate!r}; expected mean, median, iqm, max")


def _rounds_to(x: float, target: float, decimals: int) -> bool:
    # Compare against the half-unit interval rather than calling round(): binary floats make
    # round(93.05, 1) depend on representation error.
    return _within(x, target, rounding_halfwidth(decimals))


def _within(x: float, target: float, half: float) -> bool:
    """|x - target| <= half, with a relative slack of 1e-9 for binary representation."""
    slack = 1e-9 * max(1.0, abs(target))
    return abs(x - target) <= half + slack


def _readings(
    x: npt.NDArray[np.float64], spread_type: SpreadType, level: float
) -> dict[str, float]:
    """Spreads the recorded runs give under each reading the claim may have used."""
    n = int(x.size)
    if n < 2:
        return {}
    sd1 = float(np.std(x, ddof=1))
    out = {"std_ddof1": sd1, "std_ddof0": float(np.std(x, ddof=0)), "sem": sd1 / math.sqrt(n)}
    if spread_type == "ci":
        level = check_probability(level, "level")
        out["ci"] = float(stats.t.ppf((1 + level) / 2, n - 1)) * sd1 / math.sqrt(n)
    if spread_type == "range":
        out["range"] = float(np.max(x) - np.min(x)) / 2
    return out


def _best_seed_check(
    x: npt.NDArray[np.float64],
    recorded: float,
    value: float,
    decimals: int,
    aggregate: Aggregate,
    higher_is_better: bool,
) -> ConsistencyCheck:
    best = float(np.max(x) if higher_is_better else np.min(x))
    if aggregate == "max":
        return ConsistencyCheck("not_best_seed", True, "the claim states it reports the best seed")
    copied = _rounds_to(best, value, decimals) and not _rounds_to(recorded, value, decimals)
    detail = f"best seed {best:.6g}, recorded {aggregate} {recorded:.6g}, claim {value}"
    return ConsistencyCheck("not_best_seed", not copied, detail)


def _mean_ci(m: float, s: float, n: int, level: float) -> tuple[float, float]:
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * s / math.sqrt(n)
    return (m - half, m + half)


def _fmt(interval: tuple[float, float]) -> str:
    return f"({interval[0]:.6g}, {interval[1]:.6g})"
