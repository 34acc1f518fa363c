"""The exact rank of a single original run among its replayed seeds."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from fractions import Fraction

import pytest

from ledger.stats import exact_rank, place_single_run, replays_for_rank_test

REPLAYS = [0.91, 0.92, 0.93, 0.94, 0.95]


def test_lowest_of_six_is_one_in_six() -> None:
    r = exact_rank(0.5, REPLAYS)
    assert r.position == "lowest of 6" and r.tail == "lower"
    assert (r.p_lower_text, r.p_upper_text, r.p_two_sided_text) == ("1/6", "1", "1/3")
    assert r.p_lower == pytest.approx(1 / 6) and r.p_two_sided == pytest.approx(1 / 3)
    assert not r.significant and r.replays_needed == 39
    assert r.describe() == "lowest of 6: exact rank p = 1/6 one-sided (lower tail), 1/3 two-sided"
    high = exact_rank(2.0, REPLAYS)
    assert high.position == "highest of 6" and high.tail == "upper"
    assert high.p_one_sided_text == "1/6" and high.p_two_sided_text == "1/3"


def test_the_p_value_is_exact_under_exchangeability() -> None:
    """Every ordering of 6 distinct values equally likely: P(p_two_sided <= x) <= x, and the
    lower-tail p is exactly uniform on {1/6, ..., 6/6}."""
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    lower: list[Fraction] = []
    two: list[float] = []
    for perm in itertools.permutations(values):
        r = exact_rank(perm[0], perm[1:])
        lower.append(Fraction(r.p_lower_text) if r.p_lower_text != "1" else Fraction(1))
        two.append(r.p_two_sided)
    n = len(lower)
    for k in range(1, 7):
        assert sum(p <= Fraction(k, 6) for p in lower) == n * k // 6
    for x in sorted(set(two)):
        assert sum(p <= x for p in two) / n <= x + 1e-12


def test_ties_count_against_extremeness() -> None:
    r = exact_rank(0.91, REPLAYS)
    assert r.position == "rank 1 of 6 from the lowest, tied with 1 replay"
    assert r.p_lower_text == "1/3" and r.p_two_sided_text == "2/3"
    same = exact_rank(1.0, [1.0, 1.0])
    assert same.position == "equal to all 2 replays" and same.p_two_sided == 1.0


def test_significance_needs_thirty_nine_replays() -> None:
    assert replays_for_rank_test(0.05) == 39 and replays_for_rank_test(0.1) == 19
    assert not exact_rank(-1.0, list(range(38))).significant  # 2/39 > 0.05
    r = exact_rank(-1.0, list(range(39)))
    assert r.significant and r.p_two_sided_text == "1/20"


def test_single_run_placement_carries_the_rank() -> None:
    placed = place_single_run(0.5, REPLAYS)
    assert not placed.inside and placed.rank is not None and placed.rank.position == "lowest of 6"
    out = placed.to_json()
    json.dumps(out, allow_nan=False)
    assert out["rank"]["p_two_sided_text"] == "1/3"  # type: ignore[index]


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="original must be finite"):
        exact_rank(math.nan, REPLAYS)
    with pytest.raises(ValueError, match="replay needs at least one value"):
        exact_rank(1.0, [])
    with pytest.raises(ValueError, match="alpha must be strictly between"):
        exact_rank(1.0, REPLAYS, alpha=5)


def test_the_one_sided_p_is_the_tail_the_original_is_in() -> None:
    low = exact_rank(0.5, REPLAYS)
    assert (low.p_lower, low.p_upper) == (pytest.approx(1 / 6), 1.0)
    assert low.p_one_sided == pytest.approx(1 / 6) and low.p_one_sided_text == "1/6"
    high = exact_rank(2.0, REPLAYS)
    assert (high.p_lower, high.p_upper) == (1.0, pytest.approx(1 / 6))
    assert high.p_one_sided == pytest.approx(1 / 6)


def test_an_original_in_the_middle_is_reported_in_the_lower_tail() -> None:
    """Both one-sided p-values equal: the lower tail is named, as the field's comment says."""
    r = exact_rank(2.5, [1.0, 2.0, 3.0, 4.0])
    assert r.p_lower_text == r.p_upper_text == "3/5" and r.tail == "lower"
    assert r.describe() == (
        "rank 3 of 5 from the lowest: exact rank p = 3/5 one-sided (lower tail), 1 two-sided"
    )


def test_tied_replays_are_neither_below_nor_above() -> None:
    r = exact_rank(0.91, REPLAYS)
    assert (r.below, r.tied, r.above) == (0, 1, 4)
    assert r.p_upper_text == "1"  # (1 + 4 above + 1 tied) / 6
    mid = exact_rank(0.93, [0.91, 0.93, 0.93, 0.95])
    assert (mid.below, mid.tied, mid.above) == (1, 2, 1) and mid.p_upper_text == "4/5"


def test_a_rank_result_cannot_be_changed() -> None:
    r = exact_rank(0.5, REPLAYS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.significant = True  # type: ignore[misc]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3, 0.01, 0.5, 2 / 3, 0.7, 0.999])
def test_the_replays_needed_are_the_fewest_exact_rank_calls_significant(alpha: float) -> None:
    """An original below every replay: significant with replays_needed replays, not with one
    fewer (the level given as a float, compared as a user reads it: 2/7 <= 0.3 < 2/6)."""
    n = replays_for_rank_test(alpha)
    assert exact_rank(-1.0, list(range(n)), alpha=alpha).significant
    assert not exact_rank(-1.0, list(range(n - 1 or 1)), alpha=alpha).significant
    assert exact_rank(-1.0, list(range(n)), alpha=alpha).replays_needed == n


def test_the_replays_needed_at_small_levels() -> None:
    """The default level is 5%; levels below 5e-10 used to divide by zero (the level was
    rounded to a fraction with a denominator of at most 10^9: 0) and levels with a larger
    denominator got too few replays (1/1500000001 got 1999999999 instead of 3000000001)."""
    assert replays_for_rank_test() == 39
    assert replays_for_rank_test(0.3) == 6 and replays_for_rank_test(2 / 3) == 2
    assert replays_for_rank_test(0.7) == 2
    assert replays_for_rank_test(1e-9) == 1_999_999_999
    assert replays_for_rank_test(1 / 1_500_000_001) == 3_000_000_001
    assert replays_for_rank_test(3e-10) == 6_666_666_666
    tiny = replays_for_rank_test(5e-324)
    assert 2 / (tiny + 1) <= 5e-324 < 2 / tiny
