"""The exact rank of a single original run among its replayed seeds."""

from __future__ import annotations

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
