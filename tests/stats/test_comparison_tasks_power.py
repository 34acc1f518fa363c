"""Several tasks, an inconclusive comparison: how many runs per task would settle it
(``ledger/stats/comparison.py``, ``compare_tasks``). The answer does not depend on which
method came out ahead: a claim that A beats B where A came out slightly behind needs as many
runs as the same claim with the two swapped."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ledger.stats import compare_tasks

# Two tasks, five seeds each; A is 0.01 behind B on both, well inside the runs' spread.
A = {"x": [0.70, 0.74, 0.69, 0.75, 0.71], "y": [0.50, 0.56, 0.49, 0.55, 0.52]}
B = {"x": [0.71, 0.75, 0.70, 0.76, 0.72], "y": [0.51, 0.57, 0.50, 0.56, 0.53]}


def test_runs_needed_when_the_first_method_came_out_behind() -> None:
    behind = compare_tasks(A, B, n_resamples=2000)
    ahead = compare_tasks(B, A, n_resamples=2000)
    assert behind.verdict == ahead.verdict == "inconclusive"
    assert behind.difference < 0 < ahead.difference
    assert ahead.seeds_needed is not None and ahead.seeds_needed > 5
    assert behind.seeds_needed == ahead.seeds_needed
    assert behind.seeds_needed_basis is not None
    assert "observed difference -0.01, bootstrap se" in behind.seeds_needed_basis


def test_a_claim_the_runs_nearly_reach_still_asks_for_one_more_run_per_task() -> None:
    """Claimed: A beats B by 0.04 (rounded to 2 decimals). The CI [-0.017, 0.035] holds 0 and
    touches the claim: inconclusive. The normal approximation says the five runs per task
    would already do (5 x (2.8 x 0.0129 / 0.04)^2 = 4.1); the answer is never fewer than one
    more run per task than were given."""
    r = compare_tasks(B, A, difference=0.04, difference_decimals=2, n_resamples=2000)
    assert r.verdict == "inconclusive"
    assert r.seeds_needed == 6
    r = compare_tasks(B, A, difference=0.03, difference_decimals=2, n_resamples=2000)
    assert r.verdict == "inconclusive" and r.seeds_needed is not None and r.seeds_needed > 6


def test_the_result_over_several_tasks_holds_the_claim_and_the_bootstrap_interval() -> None:
    """What `ledger audit` reports for a claim over several tasks: the claimed difference as
    written, and the bootstrap interval of the difference (point, the CI that decided, level)."""
    r = compare_tasks(B, A, difference=0.04, difference_decimals=2, n_resamples=2000)
    assert r.claimed_difference == 0.04
    assert r.claimed_interval == pytest.approx((0.035, 0.045))
    bd = r.bootstrap_difference
    assert bd is not None and r.difference_ci is not None
    assert (bd.estimate, bd.low, bd.high) == (r.difference, *r.difference_ci)
    assert bd.level == pytest.approx(0.95)
    plain = compare_tasks(B, A, n_resamples=2000)
    assert plain.claimed_difference is None and plain.claimed_interval is None


def test_the_runs_needed_come_from_the_bootstrap_se_of_the_difference() -> None:
    """The runs per task needed are the normal approximation's, from the standard deviation
    (ddof 1) of the bootstrap differences, which are reproducible from the seed: numpy's
    ``default_rng(seed)`` resamples each task's runs, A's tasks then B's, in task order."""
    n = 100  # the fewest resamples allowed, where ddof 2 would move the se most (by 0.5%)
    r = compare_tasks(A, B, aggregate="mean", n_resamples=n, seed=7)
    rng = np.random.default_rng(7)

    def resampled(runs: dict[str, list[float]]) -> np.ndarray:
        rows = [np.asarray(runs[t]) for t in sorted(runs)]
        return np.concatenate([v[rng.integers(0, v.size, size=(n, v.size))] for v in rows], 1)

    diffs = resampled(A).mean(axis=1) - resampled(B).mean(axis=1)  # A's draws first
    se = float(np.std(diffs, ddof=1))
    assert r.verdict == "inconclusive" and r.difference is not None
    assert r.difference_ci == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])))
    assert r.seeds_needed_basis is not None
    assert f"bootstrap se {se:.4g} at 5 runs per task" in r.seeds_needed_basis
    z = float(stats.norm.ppf(0.975) + stats.norm.ppf(0.8))
    assert r.seeds_needed == max(6, math.ceil(5 * (z * se / abs(r.difference)) ** 2))
