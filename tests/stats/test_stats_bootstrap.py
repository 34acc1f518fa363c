"""Seeded percentile bootstrap of Delta, single-run placement and the compare_seeds wrapper."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from ledger.stats import bootstrap_delta, compare_seeds, place_single_run

ORIGINAL = [0.81, 0.79, 0.80, 0.83, 0.78, 0.80]
REPLAY = [0.80, 0.82, 0.79, 0.81, 0.80, 0.84, 0.79]


def test_same_seed_same_interval_and_global_rng_untouched() -> None:
    np.random.seed(123)
    a = bootstrap_delta(ORIGINAL, REPLAY, seed=42, n_resamples=2000)
    b = bootstrap_delta(ORIGINAL, REPLAY, seed=42, n_resamples=2000)
    after = np.random.random()
    np.random.seed(123)
    assert after == np.random.random()
    assert a == b and a.seed == 42 and a.method == "percentile"
    assert bootstrap_delta(ORIGINAL, REPLAY, seed=43, n_resamples=2000).ci90 != a.ci90


def test_fresh_seed_is_returned_and_replays_the_result() -> None:
    first = bootstrap_delta(ORIGINAL, REPLAY, n_resamples=500)
    again = bootstrap_delta(ORIGINAL, REPLAY, seed=first.seed, n_resamples=500)
    assert first == again


def test_default_resamples_and_agreement_with_welch() -> None:
    rng = np.random.default_rng(5)
    original, replay = rng.normal(0.0, 1.0, 40), rng.normal(0.3, 1.0, 40)
    boot = bootstrap_delta(original, replay, seed=1)
    assert boot.n_resamples == 10_000
    assert boot.ci95[0] < boot.ci90[0] < boot.delta < boot.ci90[1] < boot.ci95[1]
    welch = stats.ttest_ind(replay, original, equal_var=False).confidence_interval(0.90)
    assert boot.ci90 == pytest.approx((welch.low, welch.high), abs=0.05)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"seed": 1, "n_resamples": 0}, "n_resamples must be a positive integer"),
    ],
)
def test_bad_bootstrap_arguments(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_delta(ORIGINAL, REPLAY, **kwargs)


def test_single_run_prediction_interval_and_percentile() -> None:
    placed = place_single_run(0.80, REPLAY)
    n, m, s = len(REPLAY), np.mean(REPLAY), np.std(REPLAY, ddof=1)
    half = stats.t.ppf(0.975, n - 1) * s * math.sqrt(1 + 1 / n)
    assert placed.prediction_interval == pytest.approx((m - half, m + half))
    assert placed.inside
    assert placed.percentile == pytest.approx(stats.percentileofscore(REPLAY, 0.80, kind="mean"))
    assert placed.t_score == pytest.approx((0.80 - m) / (s * math.sqrt(1 + 1 / n)))
    far = place_single_run(0.95, REPLAY)
    assert not far.inside and far.percentile == 100.0 and far.p_value < 0.01


def test_single_run_against_identical_replays() -> None:
    placed = place_single_run(1.0, [2.0, 2.0, 2.0])
    assert not placed.inside and placed.p_value == 0.0
    assert placed.to_json()["t_score"] == "-inf"


def test_compare_seeds_chooses_the_test_by_group_size() -> None:
    many = compare_seeds(ORIGINAL, REPLAY, margin=0.02, seed=3, n_resamples=1000)
    assert many.tost is not None and many.bootstrap is not None and many.single_run is None
    assert many.bootstrap.seed == 3 and many.tost.margin == 0.02
    assert 0 <= many.probability_replay_higher <= 1
    one = compare_seeds([0.80], REPLAY, seed=3)
    assert one.tost is None and one.bootstrap is None and one.single_run is not None
    json.dumps(many.to_json(), allow_nan=False)
    json.dumps(one.to_json(), allow_nan=False)


def test_single_run_bad_input() -> None:
    with pytest.raises(ValueError, match="replay needs at least 2 values"):
        place_single_run(1.0, [1.0])
    with pytest.raises(ValueError, match="original must be finite"):
        place_single_run(math.nan, [1.0, 2.0])
    with pytest.raises(ValueError, match="level must be strictly between"):
        place_single_run(1.0, [1.0, 2.0], level=95)
