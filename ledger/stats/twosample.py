"""Two-sample tests for "method A beats method B": Welch's t-test, Mann-Whitney U, and power.

Implemented from their published definitions (numpy and scipy's distribution functions only);
the tests check them against ``scipy.stats.ttest_ind(equal_var=False)``,
``scipy.stats.mannwhitneyu`` and statsmodels' ``TTestIndPower``.

- Welch: t = (mean(a) - mean(b)) / se, se^2 = s_a^2 / n_a + s_b^2 / n_b (ddof 1), with the
  Welch-Satterthwaite degrees of freedom; the CI of the difference is t-based with those df.
- Mann-Whitney: U_a = #{(i, j): a_i > b_j} + 0.5 #{a_i = b_j}; p from the exact null
  distribution when there are no ties and not both groups exceed 8 values (scipy's ``auto``),
  else from the normal approximation with tie and continuity corrections.
- Power: two-sided two-sample t-test at equal group sizes n, noncentral t with df 2n - 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import JsonMixin, as_sample, binary_exponent, check_probability, unscale

__all__ = [
    "MannWhitneyResult",
    "WelchResult",
    "mann_whitney",
    "seeds_for_difference",
    "t_test_power",
    "welch_test",
]

Sample = Sequence[float] | npt.ArrayLike
MwMethod = Literal["auto", "exact", "asymptotic"]
_MAX_N = 100_000


@dataclass(frozen=True)
class WelchResult(JsonMixin):
    """Welch's t-test of Delta = mean(a) - mean(b); ``df`` is inf when both spreads are 0."""

    difference: float
    se: float
    t: float
    df: float
    p_two_sided: float
    p_greater: float  # H1: mean(a) > mean(b)
    p_less: float  # H1: mean(a) < mean(b)
    level: float
    ci: tuple[float, float]
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    std_a: float
    std_b: float


def welch_test(a: Sample, b: Sample, *, level: float = 0.95) -> WelchResult:
    """Welch's unequal-variances t-test and the ``level`` t-interval of mean(a) - mean(b)."""
    level = check_probability(level, "level")
    x = as_sample(a, "a", min_n=2)
    y = as_sample(b, "b", min_n=2)
    e = binary_exponent(x, y)  # computed on exactly scaled values: no overflow, no underflow
    x, y = np.ldexp(x, -e), np.ldexp(y, -e)
    ma, mb = float(np.mean(x)), float(np.mean(y))
    sa, sb = float(np.std(x, ddof=1)), float(np.std(y, ddof=1))
    va, vb = sa**2 / x.size, sb**2 / y.size
    se = math.sqrt(va + vb)
    diff = ma - mb
    if se > 0:
        df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
        t = diff / se
        p_greater = float(stats.t.sf(t, df))
        p_less = float(stats.t.cdf(t, df))
        p_two = min(1.0, 2 * float(stats.t.sf(abs(t), df)))
        half = float(stats.t.ppf((1 + level) / 2, df)) * se
    else:  # no spread at all: the difference is exact
        df = math.inf
        t = math.copysign(math.inf, diff) if diff else 0.0
        p_greater = 0.0 if diff > 0 else 1.0
        p_less = 0.0 if diff < 0 else 1.0
        p_two = 0.0 if diff else 1.0
        half = 0.0
    return WelchResult(
        difference=unscale(diff, e),
        se=unscale(se, e),
        t=t,
        df=float(df),
        p_two_sided=p_two,
        p_greater=p_greater,
        p_less=p_less,
        level=level,
        ci=(unscale(diff - half, e), unscale(diff + half, e)),
        n_a=int(x.size),
        n_b=int(y.size),
        mean_a=unscale(ma, e),
        mean_b=unscale(mb, e),
        std_a=unscale(sa, e),
        std_b=unscale(sb, e),
    )


@dataclass(frozen=True)
class MannWhitneyResult(JsonMixin):
    """Mann-Whitney U of ``a`` against ``b``; ``u / (n_a n_b)`` is P(A > B), ties counting 1/2."""

    u: float
    u_b: float
    p_two_sided: float
    p_greater: float  # H1: A tends to be larger
    p_less: float
    method: str
    n_a: int
    n_b: int
    ties: bool

    @property
    def probability(self) -> float:
        return self.u / (self.n_a * self.n_b)


def mann_whitney(a: Sample, b: Sample, *, method: MwMethod = "auto") -> MannWhitneyResult:
    x = as_sample(a, "a")
    y = as_sample(b, "b")
    n1, n2 = int(x.size), int(y.size)
    pooled = np.concatenate([x, y])
    ranks = stats.rankdata(pooled)  # average ranks for ties
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    u2 = n1 * n2 - u1
    _, counts = np.unique(pooled, return_counts=True)
    ties = bool(np.any(counts > 1))
    if method == "auto":
        method = "asymptotic" if (n1 > 8 and n2 > 8) or ties else "exact"
    if method == "exact":
        sf = _exact_u_sf(n1, n2)
        p_greater, p_less = sf(u1), sf(u2)
        p_two = 2 * sf(max(u1, u2))
    elif method == "asymptotic":
        p_greater = _normal_sf(u1, n1, n2, counts)
        p_less = _normal_sf(u2, n1, n2, counts)
        p_two = 2 * _normal_sf(max(u1, u2), n1, n2, counts)
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    return MannWhitneyResult(
        u=u1,
        u_b=u2,
        p_two_sided=min(max(p_two, 0.0), 1.0),
        p_greater=min(max(p_greater, 0.0), 1.0),
        p_less=min(max(p_less, 0.0), 1.0),
        method=method,
        n_a=n1,
        n_b=n2,
        ties=ties,
    )


def _normal_sf(u: float, n1: int, n2: int, tie_counts: npt.NDArray[np.int64]) -> float:
    """P(U >= u) by the normal approximation, tie-corrected variance, continuity 0.5."""
    n = n1 + n2
    t = tie_counts.astype(np.float64)
    tie_term = float((t**3 - t).sum())
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:  # every value tied: U is exactly its mean
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return float(stats.norm.sf(z))


def _exact_u_sf(n1: int, n2: int) -> _ExactSf:
    """The null distribution of U: coefficients of the Gaussian binomial [n1 + n2, n1]_q."""
    m, n = min(n1, n2), max(n1, n2)
    if m * n > 1_000_000:
        raise ValueError(f"exact Mann-Whitney needs smaller groups ({n1} x {n2}); use asymptotic")
    size = m * n + 1
    c = [0] * size
    c[0] = 1
    # prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), in exact integers.
    for i in range(1, m + 1):
        k = n + i
        for j in range(size - 1, k - 1, -1):
            c[j] -= c[j - k]
        for j in range(i, size):
            c[j] += c[j - i]
    total = math.comb(n1 + n2, n1)
    return _ExactSf(c, total)


class _ExactSf:
    """P(U >= u) under the null, from the counts of each U value."""

    def __init__(self, counts: list[int], total: int) -> None:
        self._tail: list[int] = []
        acc = 0
        for v in reversed(counts):
            acc += v
            self._tail.append(acc)
        self._tail.reverse()
        self._total = total

    def __call__(self, u: float) -> float:
        k = math.ceil(u - 1e-9)
        if k <= 0:
            return 1.0
        if k >= len(self._tail):
            return 0.0
        return self._tail[k] / self._total


def t_test_power(effect: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of a two-sided two-sample t-test with n per group at standardized effect |d|."""
    check_probability(alpha, "alpha")
    if n < 2:
        raise ValueError(f"n must be at least 2 per group, got {n}")
    d = abs(float(effect))
    df = 2 * n - 2
    nc = d * math.sqrt(n / 2)
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def seeds_for_difference(
    difference: float, sigma: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Smallest n per group for which a two-sided t-test detects ``difference`` with ``power``.

    None when there is nothing to detect (difference 0) or it would take more than 100,000.
    """
    check_probability(power, "power")
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")
    d = abs(float(difference)) / sigma
    if not math.isfinite(d) or d == 0:
        return None
    lo, hi = 2, 4
    if t_test_power(d, lo, alpha=alpha) >= power:
        return lo
    while t_test_power(d, hi, alpha=alpha) < power:
        if hi >= _MAX_N:
            return None
        lo, hi = hi, min(hi * 2, _MAX_N)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t_test_power(d, mid, alpha=alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi
