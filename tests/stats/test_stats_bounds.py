"""Single-run claims and bound claims in ledger.stats (issue 32, point 7): the numbers behind
``ledger audit``'s plain verdicts, at their boundaries."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ledger.stats import bound_seeds_needed, bound_verdict, single_run_verdict

LOW = [2.70, 2.72, 2.74, 2.76, 2.78]


# -- one run against a printed value -----------------------------------------------------------
@pytest.mark.parametrize(
    ("recorded", "verdict", "exceeds"),
    [
        (2.8217, "supported", False),
        (2.825, "supported", False),  # the rounding boundary is included
        (2.815, "supported", False),
        (2.8251, "not_supported", True),
        (2.8149, "not_supported", False),
        (1.50, "not_supported", False),
    ],
)
def test_one_run_against_its_rounding(recorded: float, verdict: str, exceeds: bool) -> None:
    got = single_run_verdict(recorded, value=2.82, decimals=2)
    assert (got.verdict, got.exceeds) == (verdict, exceeds)
    assert got.rounding == 0.005 and got.margin == 0.0
    assert got.interval == pytest.approx((2.815, 2.825))


def test_one_run_far_above_a_claim_exceeds_it() -> None:
    got = single_run_verdict(2.82, value=1.50, decimals=2)
    assert got.verdict == "not_supported" and got.exceeds
    assert got.evidence == ("one run: 2.82 lies outside (1.495, 1.505), 1.5 ± rounding 0.005",)


def test_a_margin_widens_the_interval_and_is_named() -> None:
    got = single_run_verdict(2.86, value=2.82, decimals=2, margin=0.04)
    assert got.verdict == "supported" and got.margin == 0.04
    assert got.interval == pytest.approx((2.775, 2.865))
    assert got.evidence[0].endswith("2.82 ± rounding 0.005 + margin 0.04")
    assert single_run_verdict(2.866, value=2.82, decimals=2, margin=0.04).verdict == (
        "not_supported"
    )


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"recorded": math.nan}, "recorded must be a finite number"),
        ({"recorded": math.inf}, "recorded must be a finite number"),
        ({"margin": -0.1}, "margin must be a finite number >= 0"),
        ({"margin": math.inf}, "margin must be a finite number >= 0"),
        ({"decimals": 1.5}, "decimals must be an integer"),
    ],
)
def test_one_run_refuses_bad_numbers(kw: dict[str, float], message: str) -> None:
    args: dict[str, float] = {"recorded": 2.82, "value": 2.82, "decimals": 2, "margin": 0.0}
    args.update(kw)
    recorded = args.pop("recorded")
    with pytest.raises(ValueError, match=message):
        single_run_verdict(recorded, **args)  # type: ignore[arg-type]


# -- bounds ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("x", "side", "verdict", "exceeds"),
    [
        (2.99, "below", "supported", False),
        (3.0, "below", "not_supported", True),  # a bound is strict
        (3.01, "below", "not_supported", True),
        (3.01, "above", "supported", False),
        (3.0, "above", "not_supported", False),
        (2.99, "above", "not_supported", False),
    ],
)
def test_one_run_against_a_bound(x: float, side: str, verdict: str, exceeds: bool) -> None:
    got = bound_verdict([x], bound=3.0, side=side)  # type: ignore[arg-type]
    assert (got.verdict, got.exceeds) == (verdict, exceeds)
    assert got.n == 1 and got.std is None and got.ci90 is None and got.ci95 is None
    assert got.runs_on_side == (1 if verdict == "supported" else 0)
    assert got.seeds_needed is None
    word = "" if verdict == "supported" else "not "
    assert got.evidence == (f"one run: {x:g} is {word}{side} 3",)


def test_several_runs_use_the_t_intervals_of_their_mean() -> None:
    got = bound_verdict(LOW, bound=2.75, side="below")
    m, s, n = 2.74, stats.tstd(LOW), 5
    for level, ci in ((0.90, got.ci90), (0.95, got.ci95)):
        half = stats.t.ppf((1 + level) / 2, n - 1) * s / math.sqrt(n)
        assert ci == pytest.approx((m - half, m + half))
    assert got.mean == pytest.approx(m) and got.std == pytest.approx(s)
    assert got.verdict == "inconclusive" and got.runs_on_side == 3
    assert got.seeds_needed == bound_seeds_needed(0.01, s)
    assert got.evidence[1:] == (
        "3 of 5 run(s) below 2.75 on their own",
        "90% CI (2.70985, 2.77015) of the mean reaches past 2.75",
    )


@pytest.mark.parametrize(
    ("bound", "side", "verdict"),
    [
        (2.771, "below", "supported"),  # just past the 90% CI's upper end (2.7701)
        (2.770, "below", "inconclusive"),
        (2.7008, "below", "inconclusive"),  # the 95% CI starts at 2.70074
        (2.7007, "below", "not_supported"),
        (2.709, "above", "supported"),  # the 90% CI starts at 2.70985
        (2.710, "above", "inconclusive"),
        (2.7792, "above", "inconclusive"),  # the 95% CI ends at 2.77926
        (2.7793, "above", "not_supported"),
    ],
)
def test_the_verdict_turns_where_the_intervals_end(bound: float, side: str, verdict: str) -> None:
    got = bound_verdict(LOW, bound=bound, side=side)  # type: ignore[arg-type]
    assert got.verdict == verdict
    assert got.exceeds == (verdict == "not_supported" and side == "below")


def test_runs_equal_to_the_bound_are_not_on_its_side() -> None:
    for side in ("below", "above"):
        got = bound_verdict([3.0, 3.0, 3.0], bound=3.0, side=side)  # type: ignore[arg-type]
        assert got.verdict == "not_supported" and got.runs_on_side == 0
    assert bound_verdict([2.0, 2.0], bound=3.0, side="below").verdict == "supported"
    assert bound_verdict([4.0, 4.0], bound=3.0, side="above").verdict == "supported"


def test_seeds_are_offered_only_when_the_mean_is_on_the_claimed_side() -> None:
    # The mean 2.74 is below 2.75: more runs could show it; it is not above 2.735 by enough,
    # and not above 2.745 at all: no number of runs is offered then.
    assert bound_verdict(LOW, bound=2.735, side="above").seeds_needed is not None
    got = bound_verdict(LOW, bound=2.745, side="above")
    assert got.verdict == "inconclusive" and got.seeds_needed is None


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"bound": math.inf}, "bound must be a finite number"),
        ({"bound": math.nan}, "bound must be a finite number"),
        ({"side": "under"}, "side must be 'below' or 'above'"),
        ({"values": []}, "values needs at least one value"),
        ({"values": [1.0, math.nan]}, "non-finite"),
    ],
)
def test_bounds_refuse_bad_input(kw: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"values": LOW, "bound": 3.0, "side": "below"}
    args.update(kw)
    values = args.pop("values")
    with pytest.raises(ValueError, match=message):
        bound_verdict(values, **args)  # type: ignore[arg-type]


def test_seeds_needed_for_a_one_sided_t_test() -> None:
    # d = 1 at 80% power, alpha 0.05 one-sided: n = 8 (G*Power's one-sample t-test table).
    assert bound_seeds_needed(1.0, 1.0) == 8
    assert bound_seeds_needed(2.0, 2.0) == 8
    assert bound_seeds_needed(10.0, 1.0) == 2
    assert bound_seeds_needed(0.5, 1.0) == 27
    assert bound_seeds_needed(1.0, 1.0, power=0.9) == 11
    assert bound_seeds_needed(1.0, 1.0, alpha=0.01) == 13
    assert bound_seeds_needed(0.01, 1.0) == 61827
    assert bound_seeds_needed(1e-3, 1.0) is None  # past MAX_SEEDS
    for n in (8, 27):  # the smallest n: one fewer falls short
        d = 1.0 if n == 8 else 0.5
        crit = stats.t.ppf(0.95, n - 2)
        assert stats.nct.sf(crit, n - 2, d * math.sqrt(n - 1)) < 0.8


def test_seeds_needed_agree_with_a_t_test_power_table_near_a_step() -> None:
    """d = 2.28: three seeds reach 79.5% power, four 95.7% (statsmodels' TTestPower, one-sided,
    alpha 0.05, df = n - 1; G*Power gives the same). Four are needed. The power of three seeds
    is 80.1% if the t distribution is given n + 1 degrees of freedom instead of n - 1: at d = 1
    and 0.5 both readings give 8 and 27, here they do not."""
    assert bound_seeds_needed(2.28, 1.0) == 4
    assert bound_seeds_needed(4.56, 2.0) == 4


def test_a_power_reached_exactly_is_reached() -> None:
    """The smallest n with at least the asked power: asked for exactly the power eight seeds
    have at d = 1 (0.8150...), the answer is eight, not nine."""
    exactly = float(stats.nct.sf(stats.t.ppf(0.95, 7), 7, math.sqrt(8)))
    assert 0.815 < exactly < 0.816
    assert bound_seeds_needed(1.0, 1.0, power=exactly) == 8


@pytest.mark.parametrize(
    ("gap", "sigma"), [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0), (math.inf, 1.0), (1.0, math.nan)]
)
def test_seeds_needed_refuses_what_has_no_answer(gap: float, sigma: float) -> None:
    with pytest.raises(ValueError, match="gap and sigma must be positive finite numbers"):
        bound_seeds_needed(gap, sigma)
    with pytest.raises(ValueError, match="power"):
        bound_seeds_needed(1.0, 1.0, power=1.5)
