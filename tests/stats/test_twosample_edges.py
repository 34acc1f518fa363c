"""Edges of the two-sample tests (``ledger/stats/twosample.py``): runs without any spread
(every seed gave the same value, as a deterministic program does), a method name mistyped,
results that cannot be changed, the fewest runs the normal approximation meets, and the
limits: the exact Mann-Whitney distribution's size, the most runs ``seeds_for_difference``
answers."""

from __future__ import annotations

import dataclasses
import math

import pytest
from scipy import stats

from ledger.stats import mann_whitney, seeds_for_difference, t_test_power, welch_test


@pytest.mark.parametrize(
    ("a", "b", "t", "p_greater", "p_less", "p_two"),
    [
        ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], math.inf, 0.0, 1.0, 0.0),  # A exactly above
        ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], -math.inf, 1.0, 0.0, 0.0),  # A exactly below
        ([1.5, 1.5], [1.5, 1.5, 1.5], 0.0, 1.0, 1.0, 1.0),  # the same value
    ],
)
def test_welch_without_any_spread_is_exact(
    a: list[float], b: list[float], t: float, p_greater: float, p_less: float, p_two: float
) -> None:
    w = welch_test(a, b)
    assert (w.t, w.p_greater, w.p_less, w.p_two_sided) == (t, p_greater, p_less, p_two)
    assert w.se == 0.0 and w.ci == (w.difference, w.difference)


def test_a_mistyped_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method must be 'auto', 'exact' or 'asymptotic'"):
        mann_whitney([1.0, 2.0], [3.0, 4.0], method="exakt")  # type: ignore[arg-type]


def test_results_cannot_be_changed() -> None:
    w = welch_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    m = mann_whitney([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    for obj in (w, m):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.n_a = 0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("a", "b", "method"),
    [
        ([1.0, 1.0], [1.0, 2.0], "auto"),  # two seeds each, three tied: U's variance is 1
        ([3.0], [1.0, 2.0], "asymptotic"),  # one run against two: variance 2/3
    ],
)
def test_the_normal_approximation_of_very_few_runs_matches_scipy(
    a: list[float], b: list[float], method: str
) -> None:
    """A variance of U below 1 is still a variance: only none at all (every value tied) makes
    U exactly its mean."""
    m = mann_whitney(a, b, method=method)  # type: ignore[arg-type]
    assert m.method == "asymptotic"
    for alternative, p in (
        ("two-sided", m.p_two_sided),
        ("greater", m.p_greater),
        ("less", m.p_less),
    ):
        ref = stats.mannwhitneyu(a, b, alternative=alternative, method="asymptotic")
        assert p == pytest.approx(float(ref.pvalue), rel=1e-12), alternative


def test_the_exact_distribution_is_built_up_to_a_million_pairs_and_refused_beyond() -> None:
    """One run against 1,000,000 is 1,000,000 pairs: computed (one pass over U's values);
    one more pair is refused, with the method to use instead."""
    others = [float(i) for i in range(1_000_000)]
    m = mann_whitney([-1.0], others, method="exact")
    # A below every other run: U = 0, and each of the 1,000,001 orderings is equally likely.
    assert (m.u, m.method) == (0.0, "exact")
    assert m.p_less == pytest.approx(1 / 1_000_001, rel=1e-12)
    assert m.p_greater == 1.0
    with pytest.raises(ValueError, match=r"smaller groups \(1 x 1000001\); use asymptotic"):
        mann_whitney([-1.0], [*others, 1e6], method="exact")


def test_seeds_for_difference_answers_up_to_100000_runs_and_none_beyond() -> None:
    """The docstring's "None when it would take more than 100,000": a difference (in sds) that
    needs exactly 100,000 runs per group gets 100,000; one that needs 100,001, None."""
    needs_100000, needs_100001 = 0.012529146, 0.012529083
    assert t_test_power(needs_100000, 99_999) < 0.8 <= t_test_power(needs_100000, 100_000)
    assert t_test_power(needs_100001, 100_000) < 0.8 <= t_test_power(needs_100001, 100_001)
    assert seeds_for_difference(needs_100000, 1.0) == 100_000
    assert seeds_for_difference(needs_100001, 1.0) is None


@pytest.mark.parametrize("n", [2, 6, 8])  # the first guess, the bisection's middle, a doubling
def test_a_power_met_exactly_is_reached(n: int) -> None:
    """The answer is the fewest runs whose power is at least the one asked: asked for exactly
    the power n runs give, it is n (at 2, the first answer tried; at 8, where the doubling
    4, 8, ... stops; at 6, in the bisection between 4 and 8)."""
    assert seeds_for_difference(1.0, 1.0, power=t_test_power(1.0, n)) == n


def test_seeds_for_difference_reads_the_difference_in_standard_deviations() -> None:
    # 1.0 against an sd of 2.0 is the medium effect d = 0.5 of the textbook: 64 per group.
    assert seeds_for_difference(1.0, 2.0) == seeds_for_difference(0.5, 1.0) == 64
    # ten sds apart: the fewest runs a t-test takes, two, already detect it
    assert seeds_for_difference(10.0, 1.0) == 2


def test_no_difference_needs_no_runs_whatever_the_power_asked() -> None:
    """Below alpha, a power that a test of no difference reaches by chance is still no
    reason to run anything: there is nothing to detect."""
    assert t_test_power(0.0, 2) > 0.01
    assert seeds_for_difference(0.0, 1.0, power=0.01) is None
    assert seeds_for_difference(-0.0, 1.0, power=0.01) is None


def test_power_refuses_a_bad_alpha_power_or_group_size() -> None:
    with pytest.raises(ValueError, match="alpha"):
        t_test_power(0.5, 10, alpha=1.5)
    with pytest.raises(ValueError, match="n must be at least 2 per group, got 1"):
        t_test_power(0.5, 1)
    with pytest.raises(ValueError, match="power"):
        seeds_for_difference(0.5, 1.0, power=1.5)
