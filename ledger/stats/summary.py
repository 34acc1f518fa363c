"""Multi-seed summaries: mean, median, std (ddof=1), sem, IQM and probability of improvement.

The IQM (interquartile mean, ``scipy.stats.trim_mean(x, 0.25)``) and the probability of
improvement follow rliable (Agarwal et al., 2021): robust to one outlying seed, yet still using
the middle half of the runs rather than a single median value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import FloatArray, JsonMixin, as_sample

__all__ = [
    "SampleSummary",
    "iqm",
    "mean",
    "median",
    "probability_of_improvement",
    "sem",
    "std",
    "summarize",
]

Sample = Sequence[float] | npt.ArrayLike


def mean(x: Sample) -> float:
    return float(np.mean(as_sample(x, "x")))


def median(x: Sample) -> float:
    return float(np.median(as_sample(x, "x")))


def std(x: Sample, ddof: int = 1) -> float:
    """Sample standard deviation; ddof=1 (unbiased variance) unless told otherwise."""
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    return float(np.std(as_sample(x, "x", min_n=ddof + 1), ddof=ddof))


def sem(x: Sample) -> float:
    """Standard error of the mean, std(ddof=1) / sqrt(n)."""
    return float(stats.sem(as_sample(x, "x", min_n=2), ddof=1))


def iqm(x: Sample) -> float:
    """Interquartile mean; a runs x tasks matrix is pooled over all entries, as rliable does."""
    arr = _as_scores(x, "x")
    return float(stats.trim_mean(arr, 0.25, axis=None))


@dataclass(frozen=True)
class SampleSummary(JsonMixin):
    """Descriptive statistics of one group of seeds; spreads are None for a single run."""

    n: int
    mean: float
    median: float
    iqm: float
    std: float | None
    sem: float | None
    min: float
    max: float


def summarize(x: Sample) -> SampleSummary:
    arr = as_sample(x, "x")
    n = int(arr.size)
    return SampleSummary(
        n=n,
        mean=float(np.mean(arr)),
        median=float(np.median(arr)),
        iqm=float(stats.trim_mean(arr, 0.25)),
        std=float(np.std(arr, ddof=1)) if n > 1 else None,
        sem=float(np.std(arr, ddof=1) / math.sqrt(n)) if n > 1 else None,
        min=float(arr.min()),
        max=float(arr.max()),
    )


def probability_of_improvement(x: Sample, y: Sample) -> float:
    """P(X > Y) with ties counting one half: U / (n_x n_y) from Mann-Whitney.

    For runs x tasks matrices it is computed per task and averaged over tasks (rliable).
    """
    a, b = _as_scores(x, "x"), _as_scores(y, "y")
    if a.ndim != b.ndim:
        raise ValueError(
            f"x and y must both be 1-D or both runs x tasks, got {a.ndim}-D and {b.ndim}-D"
        )
    if a.ndim == 1:
        return _poi_1d(a, b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"x has {a.shape[1]} tasks but y has {b.shape[1]}")
    return float(np.mean([_poi_1d(a[:, t], b[:, t]) for t in range(a.shape[1])]))


def _poi_1d(a: FloatArray, b: FloatArray) -> float:
    # All values tied: U is exactly n_x n_y / 2, and the test's normal approximation would have
    # zero variance, so skip it (rliable special-cases identical columns the same way).
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 0.5
    u = stats.mannwhitneyu(a, b, alternative="greater").statistic
    return float(u) / (a.size * b.size)


def _as_scores(x: Sample, name: str) -> FloatArray:
    """A 1-D sample or a 2-D runs x tasks matrix of finite values."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sample or runs x tasks matrix")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has a non-finite value")
    return arr
