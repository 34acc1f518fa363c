"""Welch's t-test, Mann-Whitney U and t-test power: hand-worked numbers, scipy and statsmodels.

ledger implements these from their definitions; scipy and statsmodels are the cross-check.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _support import require_module
from scipy import stats

from ledger.stats import mann_whitney, seeds_for_difference, t_test_power, welch_test

A = [93.1, 93.4, 93.0, 93.6, 93.3]
B = [92.5, 92.9, 92.6, 93.0, 92.7]


def test_welch_hand_worked() -> None:
    # var(A) = 0.228 / 4 = 0.057, var(B) = 0.172 / 4 = 0.043: se^2 = (0.057 + 0.043) / 5 = 0.02
    w = welch_test(A, B)
    assert w.difference == pytest.approx(0.54)
    assert w.se == pytest.approx(math.sqrt(0.02))
    assert w.t == pytest.approx(0.54 / math.sqrt(0.02))  # 3.8184
    assert w.df == pytest.approx(0.02**2 / ((0.0114**2 + 0.0086**2) / 4))  # 7.846
    assert round(w.t, 4) == 3.8184 and round(w.df, 3) == 7.846
    half = stats.t.ppf(0.975, w.df) * w.se
    assert w.ci == pytest.approx((0.54 - half, 0.54 + half))


def _samples(n: int = 200) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n):
        n1, n2 = (int(k) for k in rng.integers(2, 14, size=2))
        digits = int(rng.integers(0, 3))  # rounding makes ties
        a = np.round(rng.normal(0.0, 1.0, n1), digits)
        b = np.round(rng.normal(0.4, 2.0, n2), digits)
        out.append((a, b))
    return out


@pytest.mark.parametrize(("a", "b"), _samples())
def test_welch_matches_scipy(a: np.ndarray, b: np.ndarray) -> None:
    w = welch_test(a, b)
    with warnings.catch_warnings():  # scipy warns when a group's values are all equal
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = stats.ttest_ind(a, b, equal_var=False)
        greater = stats.ttest_ind(a, b, equal_var=False, alternative="greater")
    assert w.t == pytest.approx(float(ref.statistic), rel=1e-9, abs=1e-12)
    if w.se > 0:  # no spread in either group: the difference is exact; ledger says df = inf
        assert w.df == pytest.approx(float(ref.df), rel=1e-9)
    assert w.p_two_sided == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)
    ci = ref.confidence_interval(0.95)
    assert w.ci == pytest.approx((float(ci.low), float(ci.high)), rel=1e-9, abs=1e-12)
    assert w.p_greater == pytest.approx(float(greater.pvalue), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("a", "b"), _samples())
def test_mann_whitney_matches_scipy(a: np.ndarray, b: np.ndarray) -> None:
    m = mann_whitney(a, b)
    for alternative, p in (
        ("two-sided", m.p_two_sided),
        ("greater", m.p_greater),
        ("less", m.p_less),
    ):
        ref = stats.mannwhitneyu(a, b, alternative=alternative)
        assert m.u == float(ref.statistic)
        assert p == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15), alternative


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_mann_whitney_methods_match_scipy(method: str) -> None:
    a, b = [1.1, 2.3, 3.7, 4.2, 8.0, 9.9], [0.5, 1.9, 2.0, 3.1, 3.3, 5.0, 7.7, 10.4, 11.0]
    m = mann_whitney(a, b, method=method)  # type: ignore[arg-type]
    ref = stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
    assert m.method == method
    assert m.p_two_sided == pytest.approx(float(ref.pvalue), rel=1e-12)


def test_mann_whitney_hand_worked() -> None:
    # Every A beats every B except 93.0 against 93.0, a tie counting one half: U = 24.5.
    m = mann_whitney(A, B)
    assert (m.u, m.u_b, m.probability) == (24.5, 0.5, 0.98)
    assert m.ties and m.method == "asymptotic"
    # Without ties and small groups the p-value is exact: U = 9 of 9 for 3 vs 3 happens once in
    # C(6, 3) = 20 orderings, so P(U >= 9) = 1/20.
    exact = mann_whitney([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert exact.method == "exact" and exact.p_greater == pytest.approx(1 / 20)
    assert exact.p_two_sided == pytest.approx(2 / 20)


def test_mann_whitney_all_tied() -> None:
    m = mann_whitney([1.0, 1.0], [1.0, 1.0, 1.0])
    assert m.probability == 0.5 and m.p_two_sided == 1.0


def test_power_and_seeds_match_statsmodels() -> None:
    power_mod = require_module("statsmodels.stats.power")
    solver = power_mod.TTestIndPower()
    for d in (0.3, 0.5, 0.8, 1.0, 2.0):
        expected = math.ceil(solver.solve_power(effect_size=d, alpha=0.05, power=0.8))
        assert seeds_for_difference(d, 1.0) == expected
        assert t_test_power(d, 10) == pytest.approx(solver.power(d, nobs1=10, alpha=0.05))
    # The textbook figures: 64 per group for a medium effect (d = 0.5), 26 for a large one.
    assert seeds_for_difference(0.5, 1.0) == 64 and seeds_for_difference(0.8, 1.0) == 26


def test_seeds_for_no_difference_is_none() -> None:
    assert seeds_for_difference(0.0, 1.0) is None
    with pytest.raises(ValueError, match="sigma"):
        seeds_for_difference(1.0, 0.0)


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(ValueError, match="a needs at least 2 values"):
        welch_test([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="b has a non-finite value"):
        mann_whitney([1.0], [float("nan")])
