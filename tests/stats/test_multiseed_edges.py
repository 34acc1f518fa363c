"""compare_seeds' defaults and edges (``ledger.stats.multiseed``). Pinned because mutation testing
(issue #18) found them untested: two replayed seeds are enough, the bootstrap's default number
of resamples, and the result being frozen."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.stats import compare_seeds


def test_two_replayed_seeds_are_enough_and_one_is_not() -> None:
    result = compare_seeds([0.90, 0.91, 0.92], [0.905, 0.915], seed=1)
    assert result.replay.n == 2
    with pytest.raises(ValueError, match="replay needs at least 2 values, got 1"):
        compare_seeds([0.90, 0.91, 0.92], [0.905], seed=1)


def test_the_bootstrap_draws_ten_thousand_resamples_by_default() -> None:
    result = compare_seeds([0.90, 0.91, 0.92], [0.905, 0.915, 0.925], seed=1)
    assert result.bootstrap is not None
    assert result.bootstrap.n_resamples == 10_000


def test_a_comparison_is_frozen() -> None:
    result = compare_seeds([0.90, 0.91, 0.92], [0.905, 0.915, 0.925], seed=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tost = None  # type: ignore[misc]
