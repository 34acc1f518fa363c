"""Comparative claims: tests written for the mutation run's survivors of
``ledger/stats/comparison.py`` (kept apart from ``test_comparison_edges.py`` so that adding
one reruns only the mutants it covers)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from scipy import stats

from ledger.stats import compare_methods, compare_tasks

A = [93.1, 93.4, 93.0, 93.6, 93.3]
B = [92.5, 92.9, 92.6, 93.0, 92.7]


def test_results_cannot_be_changed() -> None:
    r = compare_methods(A, B, n_resamples=200)
    t = compare_tasks({"x": A, "y": B}, {"x": B, "y": A}, n_resamples=200)
    assert r.probability_of_improvement is not None
    for obj, field in ((r, "verdict"), (r.probability_of_improvement, "low"), (t.tasks[0], "n_a")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)


def test_an_insufficient_comparison_drew_no_resamples() -> None:
    r = compare_methods([1.0], B, seed=7)
    assert r.verdict == "insufficient" and r.n_resamples == 0 and r.seed == 7


@pytest.mark.parametrize("hib", [True, False])
def test_mann_whitney_orders_values_near_the_largest_float(hib: bool) -> None:
    """A beats B on every pair, values near 1.8e308: U counts 9 of 9 whichever way is better
    (the orientation is a sign flip; doubling the values would make them all infinite, tied)."""
    sign = 1.0 if hib else -1.0
    a = [sign * v for v in (1.7e308, 1.75e308, 1.72e308)]
    b = [sign * v for v in (1.0e308, 1.1e308, 1.05e308)]
    r = compare_methods(a, b, higher_is_better=hib, n_resamples=200)
    assert r.mann_whitney is not None and r.mann_whitney.u == 9.0 and not r.mann_whitney.ties
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == 1.0 and r.verdict == "supported"


def test_many_runs_against_two_are_resampled_in_steps() -> None:
    """802 runs against 2: the bootstrap's pairwise comparisons (802 x 2 per resample) are
    split into steps of 2,493 resamples; the steps' sizes stay integers and cover all 10,000."""
    many = [1.0 + 0.001 * (i % 7) for i in range(802)]
    r = compare_methods(many, [0.5, 0.6])
    assert r.n_resamples == 10_000 and r.bootstrap_difference is not None
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == 1.0


def test_the_bootstrap_ci_of_the_difference_is_around_the_difference() -> None:
    """Welch's 95% CI of A - B is [0.2128, 0.8672]; the percentile bootstrap's lies inside
    it, around the difference 0.54 (A resampled minus B resampled, not their sum)."""
    r = compare_methods(A, B)
    d = r.bootstrap_difference
    assert d is not None and d.estimate == pytest.approx(0.54) and d.level == 0.95
    assert 0.2128 < d.low < 0.54 < d.high < 0.8672


def test_several_tasks_draw_ten_thousand_resamples_by_default() -> None:
    """STATS.md: bootstrap CIs from 10,000 resamples, for one task and for several."""
    r = compare_tasks({"x": A, "y": B}, {"x": B, "y": A})
    assert r.n_resamples == 10_000 and compare_methods(A, B).n_resamples == 10_000


def test_two_runs_per_method_and_task_are_enough() -> None:
    r = compare_tasks(
        {"x": [1.0, 1.2], "y": [2.0, 2.1]}, {"x": [0.5, 0.6], "y": [1.5, 1.4]}, n_resamples=200
    )
    assert r.verdict == "supported" and r.runs_needed is None, r.reason


def test_a_recorded_seed_gives_the_same_stratified_interval() -> None:
    """A report records the bootstrap's seed: the same runs and seed must give the same
    interval. 30 x 30 runs on one task: 900 comparisons per resample, so the 10,000 resamples
    are drawn in steps of 4,444 (A's rows, then B's, per step): the split is part of the draw."""
    a = {"x": [1.0 + 0.01 * i for i in range(30)]}
    b = {"x": [0.9 + 0.013 * i for i in range(30)]}
    r = compare_tasks(a, b, seed=1)
    assert r.difference_ci == (-0.012751562500000256, 0.12562812500000006)
    assert r.probability_of_improvement is not None
    assert (r.probability_of_improvement.low, r.probability_of_improvement.high) == (
        0.49777777777777776,
        0.78,
    )


def test_a_recorded_seed_gives_the_same_interval_over_many_small_tasks() -> None:
    """300 tasks of 2 runs: 1,200 values per resample, drawn in steps of 3,333 resamples."""
    a = {f"t{i}": [1.0 + 0.01 * (i % 7), 1.02 + 0.01 * (i % 5)] for i in range(300)}
    b = {f"t{i}": [0.99 + 0.01 * (i % 3), 1.0 + 0.01 * (i % 4)] for i in range(300)}
    r = compare_tasks(a, b, seed=2)
    assert r.difference_ci == (0.02816583333333313, 0.03149999999999986)


def test_the_runs_needed_over_several_tasks_follow_the_normal_approximation() -> None:
    """n = n_now * ((z_{1-alpha/2} + z_power) * se / effect)^2 with se the bootstrap's standard
    error at n_now runs per task: 3 * (2.8016 * 0.5058 / 0.2348)^2 = 109.3, so 110."""
    rng = np.random.default_rng(5)
    a = {t: list(rng.normal(0.1, 1.0, 3)) for t in ("g1", "g2", "g3")}
    b = {t: list(rng.normal(0.0, 1.0, 3)) for t in ("g1", "g2", "g3")}
    r = compare_tasks(a, b)
    assert r.verdict == "inconclusive" and r.difference is not None
    assert r.seeds_needed_basis is not None
    found = re.search(r"bootstrap se ([0-9.]+) at 3 runs per task", r.seeds_needed_basis)
    assert found is not None
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    exact = 3 * (z * float(found[1]) / abs(r.difference)) ** 2
    assert 109 < exact < 109.5 and r.seeds_needed == 110


def test_no_spread_over_several_tasks_asks_for_no_runs() -> None:
    """Identical constant runs and a claimed 0.4 (0 decimals: [-0.1, 0.9], holding the CI
    [0, 0]): inconclusive, and with a bootstrap se of 0 no sample size can be computed."""
    same = {"t": [1.0] * 4}
    r = compare_tasks(same, same, aggregate="mean", n_resamples=200, difference=0.4,
                      difference_decimals=0)  # fmt: skip
    assert r.verdict == "inconclusive" and r.seeds_needed is None
    assert r.seed == 0 and compare_tasks(same, same, seed=3).seed == 3


def test_a_recorded_seed_gives_the_same_interval_one_resample_per_step() -> None:
    """1,415 x 1,415 runs: over 2,000,000 comparisons per resample, so each step draws one
    resample (A's row, then B's): the steps are part of the draw, as above."""
    a = [1.0 + 0.001 * (i % 97) for i in range(1415)]
    b = [0.99 + 0.001 * (i % 89) for i in range(1415)]
    r = compare_methods(a, b, n_resamples=100, seed=3)
    d, p = r.bootstrap_difference, r.probability_of_improvement
    assert d is not None and p is not None
    assert (d.low, d.high) == (0.010648144876325089, 0.015485777385159119)
    assert (p.low, p.high) == (0.602458583575772, 0.653547515888574)


def test_a_recorded_seed_gives_the_same_interval_past_a_full_step() -> None:
    """Ten tasks, 41 runs in all: a step holds 4,000,000 // 41 = 97,560 resamples, so
    97,561 are drawn as a full step and one more (all of A's rows of a step, then B's)."""
    a = {f"t{i}": [1.0 + 0.01 * (i % 7), 1.02 + 0.01 * (i % 5)] for i in range(10)}
    b = {f"t{i}": [0.99 + 0.01 * (i % 3), 1.0 + 0.01 * (i % 4)] for i in range(10)}
    b["t0"].append(1.01)
    r = compare_tasks(a, b, n_resamples=97_561, seed=4)
    assert r.difference_ci == (0.01745454545454539, 0.03654545454545488)
    p = r.probability_of_improvement
    assert p is not None and (p.low, p.high) == (0.7916666666666666, 0.9708333333333334)


def test_a_task_that_a_loses_on_every_pair_counts_zero_in_the_average() -> None:
    """P(A better than B), averaged over tasks: 1 on x (A above every B), 0 on y (below)."""
    r = compare_tasks(
        {"x": [2.0, 2.1], "y": [0.0, 0.1]}, {"x": [1.0, 1.1], "y": [1.0, 1.1]}, n_resamples=200
    )
    assert [t.probability_of_improvement for t in r.tasks] == [1.0, 0.0]
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == 0.5


def test_a_contradicting_claim_is_named_with_its_rounding() -> None:
    r = compare_methods(A, B, difference=5.0, difference_decimals=1, n_resamples=200)
    assert r.verdict == "contradicted"
    assert r.reason.startswith("the claimed difference (4.95 to 5.05 with rounding) lies ")
