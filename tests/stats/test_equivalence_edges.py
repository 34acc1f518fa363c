"""Welch TOST, the bootstrap and single-run placement at their edges: differences exactly at the
margin, zero and unit spreads, default-margin ties, a recorded bootstrap seed replaying the same
interval (mutation testing found these unchecked, issue #18)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from ledger.stats import (
    bootstrap_delta,
    default_margin,
    place_single_run,
    seeds_needed,
    welch_tost,
    welch_tost_from_stats,
)

ORIGINAL = [0.81, 0.79, 0.80, 0.83, 0.78, 0.80]
REPLAY = [0.80, 0.82, 0.79, 0.81, 0.80, 0.84, 0.79]


@pytest.mark.parametrize("shift", [0.5, -0.5])
def test_a_difference_exactly_at_the_margin_is_inconclusive(shift: float) -> None:
    # Equivalence needs the interval strictly inside the margin, difference strictly outside.
    r = welch_tost([1.0, 1.0], [1.0 + shift, 1.0 + shift], margin=0.5)
    assert (r.verdict, r.delta, r.se) == ("inconclusive", shift, 0.0)
    assert r.ci90 == r.ci95 == (shift, shift)
    assert r.p_tost == 1.0 and sorted((r.p_lower, r.p_upper)) == [0.0, 1.0]
    assert r.seeds_needed is None  # no spread: more seeds would not settle it
    inside = welch_tost([1.0, 1.0], [1.0 + shift * 0.999] * 2, margin=0.5)
    assert inside.verdict == "equivalent" and inside.p_tost == 0.0
    outside = welch_tost([1.0, 1.0], [1.0 + shift * 1.001] * 2, margin=0.5)
    assert outside.verdict == "different"


def test_a_standard_error_of_exactly_one_is_no_special_case() -> None:
    r = welch_tost_from_stats(0.0, 1.0, 2, 0.0, 1.0, 2, margin=1.0)
    assert r.se == 1.0 and r.df == 2.0
    t90, t95 = stats.t.ppf(0.95, 2), stats.t.ppf(0.975, 2)
    assert r.ci90 == pytest.approx((-t90, t90)) and r.ci95 == pytest.approx((-t95, t95))
    assert r.p_tost == pytest.approx(stats.t.sf(1.0, 2))
    assert (r.verdict, r.alpha) == ("inconclusive", 0.05)
    assert r.seeds_needed == 18


def test_means_must_be_finite() -> None:
    for args in ((math.nan, 1.0, 3, 0.0, 1.0, 3), (0.0, 1.0, 3, math.inf, 1.0, 3)):
        with pytest.raises(ValueError, match="must be finite"):
            welch_tost_from_stats(*args, margin=1.0)
    with pytest.raises(ValueError, match="std_replay must be a finite number"):
        welch_tost_from_stats(0.0, 1.0, 3, 0.0, math.inf, 3, margin=1.0)


def test_default_margin_terms() -> None:
    # One value has no spread: the reported precision decides.
    assert default_margin([5.0], decimals=1) == (0.05, "rounding")
    # No reported precision: the spread alone, however small.
    sigma, source = default_margin([1.0, 1.5])
    assert (sigma, source) == (pytest.approx(0.5 / math.sqrt(2)), "sigma")
    assert default_margin([1.0, 3.0]) == (pytest.approx(math.sqrt(2)), "sigma")
    # A tie goes to the spread: std([-0.5, 0, 0.5]) is exactly 0.5, half a unit of 10**0.
    assert default_margin([-0.5, 0.0, 0.5], decimals=0) == (0.5, "sigma")
    assert default_margin([0.0, 0.0], decimals=2) == (0.005, "rounding")


def test_a_recorded_bootstrap_seed_replays_the_recorded_interval() -> None:
    # A verdict stores the seed so that anyone can recompute its interval: the draws for a seed
    # must not change between versions (these numbers were computed by ledger 0.x).
    b = bootstrap_delta(ORIGINAL, REPLAY, seed=42, n_resamples=2500)
    assert b.ci90 == (-0.009047619047618971, 0.020249999999999962)
    assert b.ci95 == (-0.011666666666666662, 0.022857142857142857)
    assert b.delta == pytest.approx(np.mean(REPLAY) - np.mean(ORIGINAL))
    assert b.n_resamples == 2500 and b.seed == 42


def test_bootstrap_edge_arguments() -> None:
    assert bootstrap_delta(ORIGINAL, REPLAY, seed=0, n_resamples=10).seed == 0
    one = bootstrap_delta([1.0, 1.0], [2.0, 2.0], seed=np.int64(3), n_resamples=1)
    assert one.ci90 == one.ci95 == (1.0, 1.0) and one.n_resamples == 1 and one.seed == 3
    with pytest.raises(ValueError, match="n_resamples must be a positive integer"):
        bootstrap_delta(ORIGINAL, REPLAY, seed=1, n_resamples=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        bootstrap_delta(ORIGINAL, REPLAY, seed=1.0)  # type: ignore[arg-type]


def test_single_run_with_two_replays_and_a_small_spread() -> None:
    placed = place_single_run(0.5, [0.49, 0.5, 0.51])
    s = float(np.std([0.49, 0.5, 0.51], ddof=1))
    half = stats.t.ppf(0.975, 2) * s * math.sqrt(1 + 1 / 3)
    assert placed.prediction_interval == pytest.approx((0.5 - half, 0.5 + half))
    assert placed.inside and placed.t_score == pytest.approx(0.0, abs=1e-9)
    assert placed.p_value == pytest.approx(1.0)
    off = place_single_run(0.52, [0.49, 0.5, 0.51])
    t = (0.52 - 0.5) / (s * math.sqrt(1 + 1 / 3))
    assert off.t_score == pytest.approx(t)
    assert off.p_value == pytest.approx(2 * stats.t.sf(t, 2))
    two = place_single_run(0.5, [0.4, 0.6])
    assert two.n_replay == 2 and two.inside and two.percentile == 50.0


def test_single_run_on_identical_replays() -> None:
    same = place_single_run(2.0, [2.0, 2.0, 2.0])
    assert same.inside and same.prediction_interval == (2.0, 2.0)
    assert (same.t_score, same.p_value) == (0.0, 1.0)
    above = place_single_run(3.0, [2.0, 2.0])
    assert (above.t_score, above.p_value, above.inside) == (math.inf, 0.0, False)


def test_every_result_is_frozen() -> None:
    results = [
        welch_tost([1.0, 2.0], [1.0, 2.5], margin=1.0),
        bootstrap_delta(ORIGINAL, REPLAY, seed=1, n_resamples=10),
        place_single_run(0.8, REPLAY),
    ]
    for r in results:
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.delta = 0.0  # type: ignore[misc,union-attr]
        assert hash(r) is not None


def test_seeds_needed_uses_the_pooled_spread_of_both_groups() -> None:
    r = welch_tost([1.0, 3.0, 5.0], [2.0, 4.0, 7.5], margin=3.0)
    assert r.verdict == "inconclusive" and (r.std_original, r.n_replay) == (2.0, 3)
    pooled = math.sqrt((2.0**2 + r.std_replay**2) / 2)
    assert r.seeds_needed == seeds_needed(3.0, pooled) == 12
