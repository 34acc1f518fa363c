"""Comparative claims at their edges: a claimed difference whose rounded interval just touches
the CI, a CI of exactly zero, the texts a report prints (too few runs, seeds needed), the
resampling arguments at their bounds. Runs that repeat one value per task make the stratified
bootstrap CI exact (every resample is the same), so edges can be hit exactly."""

from __future__ import annotations

import math

import pytest

from ledger.stats import compare_methods, compare_tasks

A = [93.1, 93.4, 93.0, 93.6, 93.3]
B = [92.5, 92.9, 92.6, 93.0, 92.7]
OVERLAP = ([1.0, 1.4, 0.8, 1.3, 1.1], [0.9, 1.2, 0.7, 1.2, 1.0])
# A beats B by exactly 0.5 on every resample: the CI is [0.5, 0.5].
HIGH, LOW = {"t": [1.5] * 4}, {"t": [1.0] * 4}


def _tasks(a: dict[str, list[float]], b: dict[str, list[float]], **kw: object):  # type: ignore[no-untyped-def]
    return compare_tasks(a, b, **{"aggregate": "mean", "n_resamples": 200, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("claimed", [1.0, 0.0], ids=["from-above", "from-below"])
def test_a_claimed_difference_touching_the_ci_is_not_contradicted(claimed: float) -> None:
    """1 (0 decimals) stands for [0.5, 1.5] and 0 for [-0.5, 0.5]: each meets the CI [0.5, 0.5]
    at one end, so the CI holds a value of the claim."""
    r = _tasks(HIGH, LOW, difference=claimed, difference_decimals=0)
    assert r.difference_ci == (0.5, 0.5)
    assert r.claimed_interval == (claimed - 0.5, claimed + 0.5)
    assert r.verdict == "supported", r.reason
    assert r.reason.endswith(", which holds the claimed difference")
    off = _tasks(
        HIGH, LOW, difference=claimed + (0.01 if claimed else -0.01), difference_decimals=2
    )
    assert off.verdict == "contradicted" and "lies outside the 95% CI" in off.reason


def test_a_ci_of_exactly_zero_is_neither_side() -> None:
    for hib in (True, False):
        r = _tasks(LOW, LOW, higher_is_better=hib)
        assert r.difference_ci == (0.0, 0.0)
        assert r.verdict == "inconclusive" and r.seeds_needed is None, r.reason
        assert r.reason == "the 95% CI of the difference [0, 0] includes 0"


def test_each_side_of_zero_for_each_direction() -> None:
    assert _tasks(HIGH, LOW).verdict == "supported"
    assert _tasks(LOW, HIGH).verdict == "contradicted"
    assert _tasks(LOW, HIGH, higher_is_better=False).verdict == "supported"
    assert _tasks(HIGH, LOW, higher_is_better=False).verdict == "contradicted"
    worse = _tasks(HIGH, LOW, direction="worse")
    assert worse.verdict == "contradicted"
    assert worse.reason == (
        "the 95% CI of the difference [0.5, 0.5] excludes 0 on the opposite side: "
        "significant in the other direction"
    )


def test_too_few_runs_names_each_short_method_with_its_label() -> None:
    r = compare_methods([1.0], [], labels=("ours", "theirs"))
    assert r.verdict == "insufficient" and r.runs_needed == 2
    assert r.reason == (
        "too few runs with a value (ours: 1, theirs: 0); a comparison needs at least 2 runs "
        "per method, 5 or more recommended"
    )
    assert (r.n_a, r.n_b, r.basis, r.aggregate, r.seed) == (1, 0, "welch", "mean", 0)
    assert r.difference is None and r.welch is None
    only_b = compare_methods(A, [1.0], labels=("ours", "theirs"))
    assert "(theirs: 1)" in only_b.reason


def test_too_few_runs_on_one_task_keeps_the_per_task_counts() -> None:
    r = compare_tasks({"t": [1.0, 2.0], "u": []}, {"t": [1.0, 1.5], "u": [3.0]})
    assert r.verdict == "insufficient"
    assert r.reason.startswith("too few runs with a value (A on u: 0, B on u: 1); ")
    assert "per method and task" in r.reason
    t, u = r.tasks
    assert (t.n_a, t.n_b, t.mean_a, t.mean_b) == (2, 2, 1.5, 1.25)
    assert t.probability_of_improvement == 0.625
    assert (u.n_a, u.n_b, u.mean_a, u.mean_b, u.probability_of_improvement) == (
        0,
        1,
        None,
        3.0,
        None,
    )


def test_the_seeds_needed_say_what_they_detect() -> None:
    r = compare_methods(*OVERLAP)
    assert r.verdict == "inconclusive"
    assert r.seeds_needed_basis == (
        "to detect the observed difference 0.12, pooled sd 0.2258, two-sided t-test at alpha 0.05"
    )
    claimed = compare_methods(*OVERLAP, difference=0.3, difference_decimals=1)
    assert claimed.seeds_needed_basis is not None
    assert claimed.seeds_needed_basis.startswith("to detect the claimed difference, pooled sd")
    flat = compare_methods([1.0, 1.0], [1.0, 1.0])
    assert flat.verdict == "inconclusive"
    assert flat.seeds_needed is None and flat.seeds_needed_basis is None


def test_a_claimed_difference_without_decimals_is_taken_to_twelve() -> None:
    r = compare_methods(A, B, difference=0.5)
    assert r.claimed_difference == 0.5
    assert r.claimed_interval == (0.5 - 5e-13, 0.5 + 5e-13)
    assert compare_methods(A, B).claimed_interval is None


def test_the_level_follows_alpha() -> None:
    r = compare_methods(A, B, alpha=0.1)
    assert r.reason.startswith("the 90% CI of the difference [0.2764, 0.8036]")
    assert r.probability_of_improvement is not None and r.bootstrap_difference is not None
    assert r.probability_of_improvement.level == r.bootstrap_difference.level == 0.9


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"n_resamples": 99}, "n_resamples must be an integer >= 100"),
        ({"n_resamples": 100.0}, "n_resamples must be an integer >= 100"),
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"seed": 1.5}, "seed must be a non-negative integer"),
        ({"difference": math.nan}, "difference must be finite"),
        ({"difference": math.inf}, "difference must be finite"),
    ],
)
def test_resampling_and_claim_arguments_are_checked(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare_methods(A, B, **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        _tasks(HIGH, LOW, **kw)


def test_the_smallest_resampling_and_seed_are_accepted() -> None:
    r = compare_methods(A, B, n_resamples=100, seed=0)
    assert r.n_resamples == 100 and r.seed == 0 and r.verdict == "supported"


def test_a_method_with_exactly_the_runs_needed_is_not_named_short() -> None:
    r = compare_methods([1.0, 2.0], [3.0], labels=("ours", "theirs"))
    assert r.verdict == "insufficient"
    assert r.reason.startswith("too few runs with a value (theirs: 1); ")
