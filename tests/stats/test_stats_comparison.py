"""Comparative claims: each verdict, both metric directions, IQM and probability of improvement
against rliable's published definitions, stratified bootstrap, determinism."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from _support import require_component, require_module
from scipy import stats

from ledger.stats import compare_methods, compare_tasks, trimmed_iqm

A = [93.1, 93.4, 93.0, 93.6, 93.3]  # mean 93.28
B = [92.5, 92.9, 92.6, 93.0, 92.7]  # mean 92.74; Welch 95% CI of A - B: [0.2128, 0.8672]


def test_direction_significant_is_supported() -> None:
    r = compare_methods(A, B)
    assert r.verdict == "supported"
    assert r.difference == pytest.approx(0.54)
    assert r.difference_ci == pytest.approx((0.2128, 0.8672), abs=1e-4)
    assert r.welch is not None and r.mann_whitney is not None
    assert r.mann_whitney.u == 24.5
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == pytest.approx(0.98)
    assert r.probability_of_improvement.low <= 0.98 <= r.probability_of_improvement.high
    assert r.seeds_needed is None


def test_opposite_direction_is_contradicted() -> None:
    r = compare_methods(A, B, direction="worse")
    assert r.verdict == "contradicted" and "opposite side" in r.reason
    swapped = compare_methods(B, A)
    assert swapped.verdict == "contradicted"


def test_claimed_difference_inside_or_outside_the_ci() -> None:
    assert compare_methods(A, B, difference=0.5, difference_decimals=1).verdict == "supported"
    r = compare_methods(A, B, difference=1.0, difference_decimals=1)
    assert r.verdict == "contradicted" and "outside" in r.reason
    assert r.claimed_interval == pytest.approx((0.95, 1.05))
    # The rounding of the claimed difference counts in its favour: 0.9 stands for [0.85, 0.95].
    edge = compare_methods(A, B, difference=0.9, difference_decimals=1)
    assert edge.verdict == "supported"
    assert compare_methods(A, B, difference=0.9, difference_decimals=2).verdict == "contradicted"


def test_lower_is_better_flips_the_claimed_sign() -> None:
    loss_a, loss_b = [-x for x in A], [-x for x in B]  # A has the lower loss
    r = compare_methods(loss_a, loss_b, higher_is_better=False)
    assert r.verdict == "supported"
    assert r.difference == pytest.approx(-0.54)
    assert r.mann_whitney is not None and r.mann_whitney.u == 24.5  # counts A better
    assert compare_methods(loss_a, loss_b, higher_is_better=False, direction="worse").verdict == (
        "contradicted"
    )


def test_overlapping_methods_are_inconclusive_with_seeds_needed() -> None:
    a, b = [1.0, 1.4, 0.8, 1.3, 1.1], [0.9, 1.2, 0.7, 1.2, 1.0]
    r = compare_methods(a, b)
    assert r.verdict == "inconclusive" and "includes 0" in r.reason
    sigma = np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)
    effect = (np.mean(a) - np.mean(b)) / sigma
    power_mod = require_module("statsmodels.stats.power")
    expected = int(np.ceil(power_mod.TTestIndPower().solve_power(effect, alpha=0.05, power=0.8)))
    assert r.seeds_needed == expected
    # With a claimed difference, the seeds are those that would detect the claimed one.
    claimed = compare_methods(a, b, difference=0.3, difference_decimals=1)
    assert claimed.verdict == "inconclusive" and claimed.seeds_needed is not None
    assert claimed.seeds_needed < expected  # 0.3 is larger than the 0.1 observed


def test_too_few_runs_is_insufficient() -> None:
    r = compare_methods([93.0], B)
    assert r.verdict == "insufficient" and r.runs_needed == 2
    assert "A: 1" in r.reason and "at least 2 runs per method" in r.reason
    json.dumps(r.to_json(), allow_nan=False)


def test_bootstrap_is_seeded_and_reproducible() -> None:
    one, two = compare_methods(A, B, seed=3), compare_methods(A, B, seed=3)
    assert one.to_json() == two.to_json()
    other = compare_methods(A, B, seed=4)
    assert other.bootstrap_difference != one.bootstrap_difference
    assert one.seed == 3 and one.n_resamples == 10_000


# rliable's test vector (runs x tasks): IQM 1.5 and 2.0, P(x > y) = 1/3.
X = [[1, 2], [2, 2], [1, 1], [2, 1]]
Y = [[1, 1], [2, 2], [3, 3]]


def _by_task(m: list[list[int]]) -> dict[str, list[float]]:
    arr = np.asarray(m, dtype=float)
    return {f"task{t}": list(arr[:, t]) for t in range(arr.shape[1])}


def test_multi_task_point_estimates_follow_rliable() -> None:
    r = compare_tasks(_by_task(X), _by_task(Y))
    assert (r.aggregate_a, r.aggregate_b) == (1.5, 2.0)
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == pytest.approx(1 / 3)
    assert r.verdict in ("inconclusive", "contradicted")
    assert r.basis == "stratified bootstrap" and r.n_a == 8 and r.n_b == 6


def test_against_the_rliable_package() -> None:
    # `make install` adds it (pip install --no-deps rliable); on CI its absence is a failure.
    require_component(
        importlib.util.find_spec("rliable"), "rliable", "pip install --no-deps rliable==1.2.0"
    )
    import rliable.metrics as metrics

    rng = np.random.default_rng(11)
    x = rng.normal(1.0, 1.0, size=(6, 4))
    y = rng.normal(0.5, 1.0, size=(5, 4))
    r = compare_tasks(_by_task(x.tolist()), _by_task(y.tolist()))
    assert r.aggregate_a == pytest.approx(metrics.aggregate_iqm(x))
    assert r.aggregate_b == pytest.approx(metrics.aggregate_iqm(y))
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.estimate == pytest.approx(
        metrics.probability_of_improvement(x, y)
    )


def test_trimmed_iqm_is_scipy_trim_mean() -> None:
    for v, expected in (
        (range(1, 9), 4.5),
        (range(1, 6), 3.0),
        (range(1, 11), 5.5),
        ([0, 0, 1, 1, 1, 100], 0.75),
    ):
        arr = np.asarray(list(v), dtype=float)
        assert trimmed_iqm(arr) == expected
        assert trimmed_iqm(arr[None, :], axis=1)[0] == pytest.approx(expected)  # type: ignore[index]
        assert expected == pytest.approx(stats.trim_mean(arr, 0.25))


def test_bootstrap_is_stratified_by_task() -> None:
    # Every run of a task has the same score: resampling runs within each task cannot change
    # anything, so the stratified CI has no width. Resampling the pooled runs would mix tasks
    # of very different scales and give a wide interval.
    a = {"pong": [1.0] * 4, "breakout": [10.0] * 4, "qbert": [100.0] * 4}
    b = {"pong": [0.5] * 4, "breakout": [9.5] * 4, "qbert": [99.5] * 4}
    r = compare_tasks(a, b, aggregate="mean")
    assert r.difference_ci == pytest.approx((0.5, 0.5))
    assert r.verdict == "supported"
    assert r.probability_of_improvement is not None
    assert r.probability_of_improvement.low == r.probability_of_improvement.high == 1.0


def test_multi_task_needs_runs_on_every_task() -> None:
    a = {"pong": [1.0, 1.1], "breakout": [2.0]}
    b = {"pong": [0.9, 0.8], "breakout": [1.5, 1.6]}
    r = compare_tasks(a, b)
    assert r.verdict == "insufficient" and "A on breakout: 1" in r.reason
    assert "per method and task" in r.reason
    with pytest.raises(ValueError, match="same tasks"):
        compare_tasks({"pong": [1.0, 2.0]}, {"qbert": [1.0, 2.0]})


def test_multi_task_inconclusive_reports_seeds() -> None:
    rng = np.random.default_rng(5)
    a = {t: list(rng.normal(0.1, 1.0, 3)) for t in ("g1", "g2", "g3")}
    b = {t: list(rng.normal(0.0, 1.0, 3)) for t in ("g1", "g2", "g3")}
    r = compare_tasks(a, b)
    assert r.verdict == "inconclusive"
    assert r.seeds_needed is not None and r.seeds_needed > 3
    assert r.seeds_needed_basis is not None and "normal approximation" in r.seeds_needed_basis


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="direction"):
        compare_methods(A, B, direction="beter")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha"):
        compare_methods(A, B, alpha=1.5)
    with pytest.raises(ValueError, match="aggregate"):
        compare_tasks(_by_task(X), _by_task(Y), aggregate="median")  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [-1000, 990])
@pytest.mark.parametrize(
    ("a", "b"),
    [(A, B), ([1.0, 1.4, 0.8, 1.3, 1.1], [0.9, 1.2, 0.7, 1.2, 1.0]), (A, A)],
    ids=["supported", "inconclusive", "identical"],
)
def test_verdicts_do_not_depend_on_the_magnitude(k: int, a: list[float], b: list[float]) -> None:
    """Metrics near 1e300 overflowed (variance, bootstrap means) and near 1e-300 underflowed to
    no spread at all, which made any difference 'supported'. Scaling by 2**k is exact, so every
    number scales exactly and every verdict, p and probability stays as it was."""
    base = compare_methods(a, b, seed=3)
    big = compare_methods(np.ldexp(a, k), np.ldexp(b, k), seed=3)
    assert big.verdict == base.verdict and big.reason.split(" [")[0] == base.reason.split(" [")[0]
    assert base.difference is not None and base.difference_ci is not None
    assert big.difference == np.ldexp(base.difference, k)
    assert big.difference_ci == tuple(np.ldexp(base.difference_ci, k))
    assert big.welch is not None and base.welch is not None
    assert big.welch.p_two_sided == base.welch.p_two_sided
    assert big.welch.std_a == np.ldexp(base.welch.std_a, k)
    assert big.seeds_needed == base.seeds_needed
    d, bd = base.bootstrap_difference, big.bootstrap_difference
    assert d is not None and bd is not None
    assert (bd.estimate, bd.low, bd.high) == tuple(np.ldexp([d.estimate, d.low, d.high], k))
    tasks = compare_tasks(
        {"x": np.ldexp(a, k), "y": np.ldexp(b, k)},
        {"x": np.ldexp(b, k), "y": np.ldexp(a, k)[::-1]},
        n_resamples=500,
    )
    small = compare_tasks({"x": a, "y": b}, {"x": b, "y": a[::-1]}, n_resamples=500)
    assert tasks.verdict == small.verdict and tasks.seeds_needed == small.seeds_needed
    assert tasks.difference_ci == tuple(np.ldexp(small.difference_ci, k))  # type: ignore[arg-type]
    assert [t.mean_a for t in tasks.tasks] == [np.ldexp(t.mean_a, k) for t in small.tasks]  # type: ignore[arg-type]


def test_identical_samples_are_never_supported_at_any_scale() -> None:
    for k in (-1070, -1000, 0, 1000, 1020):
        for same in ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]):
            r = compare_methods(np.ldexp(same, k), np.ldexp(same, k), n_resamples=200)
            assert r.verdict == "inconclusive", (k, same, r.reason)
