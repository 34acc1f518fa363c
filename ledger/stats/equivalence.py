"""Is a replay statistically the same as the original? Welch TOST, bootstrap and single runs.

Failing to find a significant difference is not evidence of sameness: with few seeds nearly
anything passes. So the decision is an equivalence test (Schuirmann's two one-sided tests) on
Delta = mean(replay) - mean(original) with a margin delta stated in metric units:

- equivalent   : the 90% Welch CI of Delta lies inside [-delta, delta]  (alpha = 0.05);
- different    : the 95% Welch CI of Delta lies entirely outside [-delta, delta];
- inconclusive : neither; the result says how many seeds per group would settle it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import JsonMixin, as_sample, check_margin, check_probability
from .power import seeds_needed
from .rank import ExactRank, exact_rank

__all__ = [
    "ALPHA",
    "BootstrapResult",
    "SingleRunPlacement",
    "TostResult",
    "bootstrap_delta",
    "default_margin",
    "place_single_run",
    "welch_tost",
    "welch_tost_from_stats",
]

Sample = Sequence[float] | npt.ArrayLike
TostVerdict = Literal["equivalent", "different", "inconclusive"]
MarginSource = Literal["user", "sigma", "rounding"]

# The protocol fixes alpha: equivalence needs the 90% CI (two 5% one-sided tests) inside the
# margin, difference needs the 95% CI outside it.
ALPHA = 0.05


@dataclass(frozen=True)
class TostResult(JsonMixin):
    """Welch TOST of Delta = mean(replay) - mean(original); ``df`` is inf if both spreads are 0."""

    verdict: TostVerdict
    delta: float
    margin: float
    margin_source: MarginSource
    se: float
    df: float
    ci90: tuple[float, float]
    ci95: tuple[float, float]
    p_tost: float
    p_lower: float
    p_upper: float
    alpha: float
    n_original: int
    n_replay: int
    mean_original: float
    mean_replay: float
    std_original: float
    std_replay: float
    seeds_needed: int | None


def default_margin(original: Sample, decimals: int | None = None) -> tuple[float, MarginSource]:
    """delta = max(std of the original seeds, half a unit of the last reported digit).

    Returns the margin and which term set it, so the result can say why it used that delta.
    """
    arr = as_sample(original, "original")
    sigma = float(np.std(arr, ddof=1)) if arr.size > 1 else 0.0
    half_digit = 0.5 * 10.0 ** (-decimals) if decimals is not None else 0.0
    if max(sigma, half_digit) <= 0:
        raise ValueError(
            "cannot choose a default margin: the original seeds have no spread and no reported "
            "precision was given; pass margin= (in metric units) or decimals="
        )
    return (sigma, "sigma") if sigma >= half_digit else (half_digit, "rounding")


def welch_tost(
    original: Sample,
    replay: Sample,
    *,
    margin: float | None = None,
    decimals: int | None = None,
    power: float = 0.8,
) -> TostResult:
    """Welch TOST of the replay seeds against the original seeds (two or more each).

    Without ``margin`` the default of :func:`default_margin` is used. ``power`` sets the target
    for the seeds-needed estimate reported when the verdict is inconclusive.
    """
    a = as_sample(original, "original", min_n=2)
    b = as_sample(replay, "replay", min_n=2)
    source: MarginSource = "user"
    if margin is None:
        margin, source = default_margin(a, decimals)
    result = welch_tost_from_stats(
        float(np.mean(a)),
        float(np.std(a, ddof=1)),
        int(a.size),
        float(np.mean(b)),
        float(np.std(b, ddof=1)),
        int(b.size),
        margin=margin,
        power=power,
    )
    return result if source == "user" else _with_source(result, source)


def welch_tost_from_stats(
    mean_original: float,
    std_original: float,
    n_original: int,
    mean_replay: float,
    std_replay: float,
    n_replay: int,
    *,
    margin: float,
    power: float = 0.8,
) -> TostResult:
    """Welch TOST from group summaries (std with ddof=1); used for claims given as mean +- sd."""
    margin = check_margin(margin)
    power = check_probability(power, "power")
    mean_original, std_original = float(mean_original), float(std_original)
    mean_replay, std_replay = float(mean_replay), float(std_replay)
    for name, n in (("n_original", n_original), ("n_replay", n_replay)):
        if n < 2:
            raise ValueError(f"{name} must be at least 2 for a two-group test, got {n}")
    for name, x in (("std_original", std_original), ("std_replay", std_replay)):
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    for name, x in (("mean_original", mean_original), ("mean_replay", mean_replay)):
        if not math.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x!r}")

    v1, v2 = std_original**2 / n_original, std_replay**2 / n_replay
    se = math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1**2 / (n_original - 1) + v2**2 / (n_replay - 1)) if se else math.inf
    delta = mean_replay - mean_original
    ci90 = _interval(delta, se, df, 0.90)
    ci95 = _interval(delta, se, df, 0.95)
    p_lower = _t_sf(delta + margin, se, df)  # H0: Delta <= -margin
    p_upper = _t_sf(margin - delta, se, df)  # H0: Delta >= +margin
    verdict: TostVerdict = "inconclusive"
    if -margin < ci90[0] and ci90[1] < margin:
        verdict = "equivalent"
    elif ci95[1] < -margin or ci95[0] > margin:
        verdict = "different"
    needed = None
    if verdict == "inconclusive":
        sigma = math.sqrt((std_original**2 + std_replay**2) / 2)
        needed = seeds_needed(margin, sigma, power=power, alpha=ALPHA) if sigma > 0 else None
    return TostResult(
        verdict=verdict,
        delta=delta,
        margin=margin,
        margin_source="user",
        se=se,
        df=float(df),
        ci90=ci90,
        ci95=ci95,
        p_tost=max(p_lower, p_upper),
        p_lower=p_lower,
        p_upper=p_upper,
        alpha=ALPHA,
        n_original=int(n_original),
        n_replay=int(n_replay),
        mean_original=mean_original,
        mean_replay=mean_replay,
        std_original=std_original,
        std_replay=std_replay,
        seeds_needed=needed,
    )


def _with_source(result: TostResult, source: MarginSource) -> TostResult:
    return replace(result, margin_source=source)


def _interval(center: float, se: float, df: float, level: float) -> tuple[float, float]:
    """Two-sided t interval with coverage ``level`` (0.90 leaves 5% in each tail)."""
    if se == 0:
        return (center, center)
    half = float(stats.t.ppf((1 + level) / 2, df)) * se
    return (center - half, center + half)


def _t_sf(distance: float, se: float, df: float) -> float:
    """P(T >= distance / se): the p-value of one one-sided test."""
    if se == 0:
        return 0.0 if distance > 0 else 1.0
    return float(stats.t.sf(distance / se, df))


@dataclass(frozen=True)
class BootstrapResult(JsonMixin):
    """Percentile bootstrap CIs of Delta; ``seed`` reproduces them exactly."""

    delta: float
    ci90: tuple[float, float]
    ci95: tuple[float, float]
    n_resamples: int
    seed: int
    method: str = "percentile"


def bootstrap_delta(
    original: Sample,
    replay: Sample,
    *,
    seed: int | None = None,
    n_resamples: int = 10_000,
) -> BootstrapResult:
    """Resample each group with replacement; percentile CIs of the difference of means.

    Draws come from ``numpy.random.default_rng(seed)``, never the global RNG. Without a seed a
    fresh one is drawn from OS entropy and returned, so the ledger can record and replay it.
    """
    a = as_sample(original, "original")
    b = as_sample(replay, "replay")
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        if not isinstance(entropy, int):
            raise TypeError(f"OS entropy came as {type(entropy).__name__}, not an int")
        seed = entropy
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    rng = np.random.default_rng(int(seed))
    deltas = np.empty(n_resamples)
    chunk = 1000  # bounds memory at chunk * n indices per group
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        ma = a[rng.integers(0, a.size, size=(k, a.size))].mean(axis=1)
        mb = b[rng.integers(0, b.size, size=(k, b.size))].mean(axis=1)
        deltas[start : start + k] = mb - ma
    q = np.quantile(deltas, [0.05, 0.95, 0.025, 0.975])
    return BootstrapResult(
        delta=float(np.mean(b) - np.mean(a)),
        ci90=(float(q[0]), float(q[1])),
        ci95=(float(q[2]), float(q[3])),
        n_resamples=n_resamples,
        seed=int(seed),
    )


@dataclass(frozen=True)
class SingleRunPlacement(JsonMixin):
    """Where a single original run falls among the replayed seeds."""

    original: float
    n_replay: int
    mean_replay: float
    std_replay: float
    level: float
    prediction_interval: tuple[float, float]
    inside: bool
    t_score: float
    p_value: float
    percentile: float
    # The distribution-free evidence: its rank among the n + 1 values (ledger/stats/rank.py).
    rank: ExactRank | None = None


def place_single_run(original: float, replay: Sample, *, level: float = 0.95) -> SingleRunPlacement:
    """Compare one original run with the replay distribution instead of a two-group test.

    The t prediction interval for one new observation, mean +- t * s * sqrt(1 + 1/n), is where
    the original should fall if it came from the same (normal) distribution; ``percentile`` is
    its empirical rank among the replays (ties count one half), and ``rank`` the exact rank
    p-values, which need no distribution.
    """
    level = check_probability(level, "level")
    value = float(original)
    if not math.isfinite(value):
        raise ValueError(f"original must be finite, got {original!r}")
    b = as_sample(replay, "replay", min_n=2)
    n, m, s = int(b.size), float(np.mean(b)), float(np.std(b, ddof=1))
    scale = s * math.sqrt(1 + 1 / n)
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * scale
    if scale > 0:
        t_score = (value - m) / scale
        p_value = float(2 * stats.t.sf(abs(t_score), n - 1))
    else:
        t_score = 0.0 if value == m else math.copysign(math.inf, value - m)
        p_value = 1.0 if value == m else 0.0
    low, high = m - half, m + half
    return SingleRunPlacement(
        original=value,
        n_replay=n,
        mean_replay=m,
        std_replay=s,
        level=level,
        prediction_interval=(low, high),
        inside=low <= value <= high,
        t_score=t_score,
        p_value=p_value,
        percentile=float(stats.percentileofscore(b, value, kind="mean")),
        rank=exact_rank(value, b, alpha=ALPHA),
    )
