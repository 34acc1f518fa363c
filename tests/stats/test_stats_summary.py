"""Summaries: IQM and probability-of-improvement vectors from STATS.md, scipy cross-checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ledger.stats import iqm, mean, median, probability_of_improvement, sem, std, summarize

X = [[1, 2], [2, 2], [1, 1], [2, 1]]
Y = [[1, 1], [2, 2], [3, 3]]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (list(range(1, 9)), 4.5),
        (list(range(1, 6)), 3.0),
        (list(range(1, 11)), 5.5),
        ([0, 0, 1, 1, 1, 100], 0.75),
    ],
)
def test_iqm_vectors(values: list[float], expected: float) -> None:
    assert iqm(values) == pytest.approx(expected)


def test_rliable_vector() -> None:
    assert iqm(X) == pytest.approx(1.5)
    assert iqm(Y) == pytest.approx(2.0)
    assert probability_of_improvement(X, Y) == pytest.approx(1 / 3)
    assert probability_of_improvement(Y, X) == pytest.approx(2 / 3)


def test_probability_of_improvement_counts_ties_as_half() -> None:
    assert probability_of_improvement([1, 2], [1, 2]) == 0.5
    assert probability_of_improvement([1, 1], [1, 1, 1]) == 0.5
    assert probability_of_improvement([3, 4], [1, 2]) == 1.0
    assert probability_of_improvement([1, 2, 3], [2]) == pytest.approx(0.5)


samples = st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=12)


@settings(max_examples=50)
@given(samples, samples)
def test_probability_of_improvement_matches_pairwise_count(x: list[float], y: list[float]) -> None:
    pairs = [(a > b) + 0.5 * (a == b) for a in x for b in y]
    assert probability_of_improvement(x, y) == pytest.approx(sum(pairs) / len(pairs))
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1)


def test_descriptive_statistics_match_numpy_and_scipy() -> None:
    x = np.random.default_rng(7).normal(3.0, 2.0, size=11)
    assert mean(x) == pytest.approx(np.mean(x))
    assert median(x) == pytest.approx(np.median(x))
    assert std(x) == pytest.approx(np.std(x, ddof=1))
    assert std(x, ddof=0) == pytest.approx(np.std(x))
    assert sem(x) == pytest.approx(stats.sem(x))
    summary = summarize(x)
    assert summary.std == pytest.approx(np.std(x, ddof=1))
    assert summary.sem == pytest.approx(stats.sem(x))
    assert summary.iqm == pytest.approx(stats.trim_mean(x, 0.25))
    assert (summary.min, summary.max, summary.n) == (x.min(), x.max(), 11)


def test_single_run_summary_has_no_spread() -> None:
    summary = summarize([0.9])
    assert summary.std is None and summary.sem is None
    assert summary.to_json()["std"] is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mean([]), "needs at least one value"),
        (lambda: std([1.0]), "needs at least 2 values"),
        (lambda: sem([1.0]), "needs at least 2 values"),
        (lambda: std([1.0, 2.0], ddof=2), "ddof must be 0 or 1"),
        (lambda: median([1.0, float("nan")]), "non-finite value nan at index 1"),
        (lambda: iqm([]), "non-empty"),
        (lambda: probability_of_improvement(X, [1.0, 2.0]), "both be 1-D or both"),
        (lambda: probability_of_improvement(X, [[1.0, 2.0, 3.0]]), "x has 2 tasks but y has 3"),
        (lambda: probability_of_improvement([1.0], [float("inf")]), "non-finite"),
    ],
)
def test_bad_input(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
