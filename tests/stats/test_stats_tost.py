"""Welch TOST: worked example, statsmodels/scipy cross-checks, verdict rules and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.weightstats import ttost_ind

from ledger.stats import default_margin, seeds_needed, welch_tost, welch_tost_from_stats

SEEDS = [92.9, 93.2, 93.0, 93.3, 92.8]
SEEDS_MEAN, SEEDS_STD = float(np.mean(SEEDS)), float(np.std(SEEDS, ddof=1))


def test_stats_md_worked_example() -> None:
    # The claim "93.1 +- 0.2 (std), n = 5" as the original group, the seeds as the replay.
    r = welch_tost_from_stats(93.1, 0.2, 5, SEEDS_MEAN, SEEDS_STD, 5, margin=0.3)
    assert r.delta == pytest.approx(-0.06, abs=1e-9)
    assert r.se == pytest.approx(0.1288, abs=5e-5)
    assert r.df == pytest.approx(7.99, abs=5e-3)
    assert r.ci90[0] == pytest.approx(-0.2996, abs=5e-5)
    assert r.ci90[1] == pytest.approx(0.1796, abs=5e-5)
    assert r.p_tost == pytest.approx(0.0498, abs=5e-5)
    assert r.verdict == "equivalent"
    wider = welch_tost_from_stats(93.1, 0.2, 5, SEEDS_MEAN, SEEDS_STD, 5, margin=0.5)
    assert wider.p_tost == pytest.approx(0.00459, abs=5e-6)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 12),
    st.integers(2, 12),
    st.floats(0.1, 3.0),
    st.floats(0.1, 3.0),
    st.floats(-2.0, 2.0),
    st.floats(0.1, 3.0),
    st.integers(0, 2**32 - 1),
)
def test_p_value_and_intervals_match_statsmodels_and_scipy(
    n1: int, n2: int, s1: float, s2: float, shift: float, margin: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    original, replay = rng.normal(0, s1, n1), rng.normal(shift, s2, n2)
    r = welch_tost(original, replay, margin=margin)
    p_sm = ttost_ind(replay, original, -margin, margin, usevar="unequal")[0]
    assert r.p_tost == pytest.approx(p_sm, rel=1e-9, abs=1e-12)
    welch = stats.ttest_ind(replay, original, equal_var=False)
    assert r.df == pytest.approx(welch.df, rel=1e-9)
    for level, ci in ((0.90, r.ci90), (0.95, r.ci95)):
        expected = welch.confidence_interval(level)
        assert ci == pytest.approx((expected.low, expected.high), rel=1e-9, abs=1e-12)
    assert (r.verdict == "equivalent") == (r.p_tost < 0.05)


def test_clearly_equivalent_and_clearly_different() -> None:
    rng = np.random.default_rng(0)
    original = rng.normal(10.0, 0.1, 30)
    same = welch_tost(original, rng.normal(10.0, 0.1, 30), margin=0.1)
    assert same.verdict == "equivalent" and same.seeds_needed is None
    shifted = welch_tost(original, rng.normal(11.0, 0.1, 30), margin=0.1)
    assert shifted.verdict == "different" and shifted.ci95[0] > 0.1


def test_inconclusive_reports_seeds_needed() -> None:
    r = welch_tost([1.0, 2.0, 3.0], [1.5, 2.5, 3.5], margin=1.0)
    assert r.verdict == "inconclusive"
    pooled = math.sqrt((r.std_original**2 + r.std_replay**2) / 2)
    assert r.seeds_needed == seeds_needed(1.0, pooled)
    assert r.seeds_needed is not None and r.seeds_needed > 3


def test_default_margin_is_reported_with_its_source() -> None:
    r = welch_tost([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert (r.margin, r.margin_source) == (1.0, "sigma")
    assert default_margin([1.0, 1.0], decimals=2) == (0.005, "rounding")
    assert default_margin([1.0, 1.2], decimals=0) == (0.5, "rounding")
    assert welch_tost([1.0, 2.0], [1.0, 2.0], margin=0.4).margin_source == "user"


def test_deterministic_replays_with_zero_spread() -> None:
    same = welch_tost([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], decimals=3)
    assert same.verdict == "equivalent" and same.margin == pytest.approx(0.0005)
    assert same.se == 0 and same.ci90 == (0.0, 0.0) and same.p_tost == 0.0
    off = welch_tost([0.5, 0.5], [0.6, 0.6], decimals=3)
    assert off.verdict == "different" and off.p_tost == 1.0
    assert json.dumps(same.to_json(), allow_nan=False)
    assert same.to_json()["df"] == "inf"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: welch_tost([], [1.0, 2.0], margin=1), "original needs at least 2 values"),
        (lambda: welch_tost([1.0], [1.0, 2.0], margin=1), "original needs at least 2 values"),
        (lambda: welch_tost([1.0, 2.0], [1.0, math.nan], margin=1), "replay has a non-finite"),
        (lambda: welch_tost([1.0, 2.0], [1.0, 2.0], margin=-0.1), "margin must be a positive"),
        (lambda: welch_tost([1.0, 2.0], [1.0, 2.0], margin=0.0), "margin must be a positive"),
        (lambda: welch_tost([1.0, 1.0], [1.0, 2.0]), "cannot choose a default margin"),
        (lambda: welch_tost([[1.0, 2.0]], [1.0, 2.0], margin=1), "must be a 1-D sequence"),
        (lambda: welch_tost([1.0, 2.0], [1.0, 2.0], margin=1, power=1.0), "power must be"),
        (
            lambda: welch_tost_from_stats(0.0, -1.0, 3, 0.0, 1.0, 3, margin=1.0),
            "std_original must be",
        ),
        (
            lambda: welch_tost_from_stats(0.0, 1.0, 1, 0.0, 1.0, 3, margin=1.0),
            "n_original must be at least 2",
        ),
    ],
)
def test_bad_input(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
