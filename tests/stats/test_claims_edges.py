"""Claim audits at their edges (STATS.md section 4): a replicated CI exactly on the end of the
support or refute interval, zero spread, the fewest seeds, every aggregate and spread reading,
the texts a report prints, and the half-unit "rounds to" test at its tolerance."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ledger.stats import (
    check_consistency,
    claim_tost,
    claim_verdict,
    combine_verdicts,
    rounding_halfwidth,
    sigma_readings,
    single_run_verdict,
    spread_to_sigma,
)

# Claim 1 (0 decimals: r = 0.5) with margin 1: support (0.5, 1.5), refute (-0.5, 2.5).
CLAIM = {"value": 1.0, "decimals": 0, "margin": 1.0}


def test_the_intervals_a_verdict_rests_on() -> None:
    r = claim_verdict([1.0, 1.0], **CLAIM)
    assert r.rounding == 0.5 and r.margin == 1.0 and r.claim_value == 1.0
    assert r.support_interval == (0.5, 1.5) and r.refute_interval == (-0.5, 2.5)
    t = claim_verdict([93.0, 93.2, 93.1], value=93.1, decimals=1, margin=0.3)
    assert t.support_interval == pytest.approx((92.85, 93.35))
    assert t.refute_interval == pytest.approx((92.75, 93.45))


@pytest.mark.parametrize("mean", [2.5, -0.5])
def test_a_ci_touching_the_refute_interval_is_not_outside_it(mean: float) -> None:
    """Zero spread: both CIs are the point ``mean``, on an end of [-0.5, 2.5]. Not supported
    needs the CI entirely outside (strict, as equivalence.py's "different"): inconclusive."""
    r = claim_verdict([mean, mean], **CLAIM)
    assert r.ci95 == (mean, mean)
    assert r.verdict == "inconclusive" and not r.exceeds
    assert r.seeds_needed is None  # no spread: no sample size to compute
    assert r.evidence[2].startswith("90% CI (")
    just_out = claim_verdict([mean * 1.0001, mean * 1.0001], **CLAIM)
    assert just_out.verdict == "not_supported" and just_out.exceeds == (mean > 0)


@pytest.mark.parametrize("mean", [0.5, 1.5])
def test_a_ci_touching_the_support_interval_is_not_inside_it(mean: float) -> None:
    r = claim_verdict([mean, mean], **CLAIM)
    assert r.ci90 == (mean, mean) and r.verdict == "inconclusive"
    inside = claim_verdict([1.0, 1.0], **CLAIM)
    assert inside.verdict == "supported" and inside.seeds_needed is None
    assert inside.evidence == (
        "2 replicated seeds: mean 1, std 0",
        "claim 1.0 +- rounding 0.5, margin 1",
        "90% CI (1, 1) of the replicated mean lies inside (0.5, 1.5)",
    )


def test_two_seeds_are_enough_for_a_verdict_and_a_tost() -> None:
    assert claim_verdict([93.0, 93.2], value=93.1, decimals=1, margin=0.3).n == 2
    t = claim_tost([93.0, 93.2], value=93.1, sigma=0.0, n=5, margin=0.3)
    assert t.n_replay == 2 and t.delta == pytest.approx(0.0)


def test_the_below_evidence_names_the_side() -> None:
    r = claim_verdict([-3.0, -3.1, -2.9], **CLAIM)
    assert r.verdict == "not_supported" and not r.exceeds
    assert " lies below (-0.5, 2.5)" in r.evidence[2]


def test_a_spread_of_zero_is_a_spread() -> None:
    assert spread_to_sigma(0.0, "std", 5) == 0.0
    assert spread_to_sigma(0.0, "sem", 5) == 0.0


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_spread_that_is_not_finite_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="spread must be a finite number"):
        spread_to_sigma(bad, "std", 5)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_sigma_that_is_not_finite_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="sigma must be a finite number"):
        claim_tost([93.0, 93.2], value=93.1, sigma=bad, n=5, margin=0.3)


@pytest.mark.parametrize("n", [True, 2.5, 1])
def test_the_seed_count_must_be_an_integer_of_at_least_two(n: object) -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        spread_to_sigma(0.2, "std", n)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        spread_to_sigma(0.2, "range", n)  # type: ignore[arg-type]


def test_decimals_must_be_an_integer_not_a_bool() -> None:
    with pytest.raises(ValueError, match="decimals must be an integer"):
        rounding_halfwidth(True)
    assert rounding_halfwidth(3) == pytest.approx(0.0005)


def test_the_ci_reading_of_the_claim_uses_its_level_by_default_95() -> None:
    """A t-CI half-width of 0.2 over 5 seeds: sigma 0.1611 at 95% (STATS.md)."""
    assert sigma_readings(0.2, "ci", 5) == pytest.approx({"ci": 0.1611}, abs=5e-5)
    assert sigma_readings(0.2, "ci", 5, level=0.99)["ci"] < 0.1611
    assert sigma_readings(0.2, "range", 5) == pytest.approx({"range": 0.4 / 2.326}, abs=1e-3)


def test_combining_one_reading_gives_it() -> None:
    assert combine_verdicts(["not_supported"]) == "not_supported"
    assert combine_verdicts(["inconclusive", "inconclusive", "inconclusive"]) == "inconclusive"


def test_results_cannot_be_changed() -> None:
    report = check_consistency(
        [93.0, 93.2], value=93.1, decimals=1, spread=0.1, spread_type="sem", n_seeds=2
    )
    verdict = claim_verdict([1.0, 1.0], **CLAIM)
    one = single_run_verdict(2.8217, value=2.82, decimals=2)  # a claim about one run
    for obj, field in (
        (report, "ok"),
        (report.checks[0], "passed"),
        (verdict, "verdict"),
        (one, "verdict"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)


# -- consistency checks -----------------------------------------------------------------------
def test_the_consistency_details_a_report_prints() -> None:
    c = check_consistency(
        [92.9, 93.0, 93.1, 93.2, 93.3], value=93.1, decimals=1, spread=0.2, spread_type="std",
        n_seeds=5,
    )  # fmt: skip
    d = {k.name: k.detail for k in c.checks}
    assert d["n_matches"] == "5 recorded runs, claim says 5"
    assert d["value_rounds"] == "recorded mean 93.1000, claim 93.1"
    assert d["spread_rounds"] == (
        "claimed std 0.2; recorded std_ddof1 0.1581, std_ddof0 0.1414, sem 0.07071; "
        "matching: std_ddof1"
    )
    assert d["not_best_seed"] == "best seed 93.3, recorded mean 93.1, claim 93.1"
    whole = check_consistency(
        [93.0, 93.2], value=93.0, decimals=0, spread=5.0, spread_type="std", n_seeds=2
    )
    assert {k.name: k.detail for k in whole.checks}["value_rounds"] == (
        "recorded mean 93.100, claim 93"
    )
    d = {k.name: k.detail for k in whole.checks}
    assert d["spread_rounds"].endswith("; matching: none")


def test_a_claim_rounded_to_hundreds_prints_whole_numbers() -> None:
    """decimals -2: "1200" stands for [1150, 1250]. The details a report prints show the
    claim as the whole number it is, and the recorded mean with three decimals."""
    c = check_consistency(
        [1180.0, 1230.0], value=1200.0, decimals=-2, spread=40.0, spread_type="std", n_seeds=2
    )
    d = {k.name: k for k in c.checks}
    assert d["value_rounds"].passed
    assert d["value_rounds"].detail == "recorded mean 1205.000, claim 1200"


def test_one_recorded_run_has_no_spread_to_match() -> None:
    c = check_consistency([93.1], value=93.1, decimals=1, spread=0.2, spread_type="std", n_seeds=1)
    spread = {k.name: k for k in c.checks}["spread_rounds"]
    assert not spread.passed and not c.ok and c.readings == {}
    assert spread.detail == "claimed std 0.2; recorded none (one run); matching: none"


def test_two_recorded_runs_have_a_spread() -> None:
    c = check_consistency(
        [93.0, 93.2], value=93.1, decimals=1, spread=0.1, spread_type="sem", n_seeds=2
    )
    assert c.readings == pytest.approx(
        {"std_ddof1": 0.1414, "std_ddof0": 0.1, "sem": 0.1}, abs=5e-5
    )
    assert c.ok and "sem" in c.matching_readings


def test_a_claimed_t_ci_is_read_at_its_level() -> None:
    """Five seeds, std 0.1581: the 95% t-CI half-width is 2.776 * 0.1581 / sqrt(5) = 0.1963."""
    seeds = [92.9, 93.0, 93.1, 93.2, 93.3]
    c = check_consistency(seeds, value=93.1, decimals=1, spread=0.2, spread_type="ci", n_seeds=5)
    assert c.readings["ci"] == pytest.approx(0.1963, abs=5e-5) and c.ok
    assert c.matching_readings[-1] == "ci"
    wide = check_consistency(
        seeds, value=93.1, decimals=1, spread=0.3, spread_type="ci", n_seeds=5, level=0.99
    )
    assert wide.readings["ci"] == pytest.approx(4.604 * 0.1581 / math.sqrt(5), abs=5e-4)
    assert wide.ok


def test_a_claimed_range_is_read_as_half_of_max_minus_min() -> None:
    c = check_consistency(
        [92.9, 93.0, 93.1, 93.2, 93.3], value=93.1, decimals=1, spread=0.2, spread_type="range",
        n_seeds=5,
    )  # fmt: skip
    assert c.readings["range"] == pytest.approx(0.2) and c.ok


@pytest.mark.parametrize(
    ("aggregate", "value"), [("mean", 17.1667), ("median", 1.0), ("iqm", 0.75), ("max", 100.0)]
)
def test_each_aggregate_is_computed_as_stats_md_says(aggregate: str, value: float) -> None:
    """STATS.md's IQM vector [0, 0, 1, 1, 1, 100] -> 0.75 (median 1, mean 17.17, max 100)."""
    c = check_consistency(
        [0.0, 0.0, 1.0, 1.0, 1.0, 100.0], value=value, decimals=4, spread=40.0,
        spread_type="std", n_seeds=6, aggregate=aggregate,  # type: ignore[arg-type]
    )  # fmt: skip
    assert c.recorded_value == pytest.approx(value, abs=5e-5)
    assert {k.name: k.passed for k in c.checks}["value_rounds"]


def test_the_best_seed_check_passes_when_the_aggregate_also_rounds_to_the_claim() -> None:
    """Every seed equal: the best seed rounds to the claim, but so does the mean."""
    c = check_consistency(
        [93.1, 93.1, 93.1], value=93.1, decimals=1, spread=0.0, spread_type="std", n_seeds=3
    )
    best = {k.name: k for k in c.checks}["not_best_seed"]
    assert best.passed and c.ok
    stated = check_consistency(
        [90.0, 93.1], value=93.1, decimals=1, spread=2.2, spread_type="std", n_seeds=2,
        aggregate="max",
    )  # fmt: skip
    best = {k.name: k for k in stated.checks}["not_best_seed"]
    assert best.passed and best.detail == "the claim states it reports the best seed"


def test_rounds_to_includes_the_half_unit_and_a_billionth_more() -> None:
    """A value "rounds to" the claim within half a unit, boundary included, with a slack of
    1e-9 of the claimed value (at least 1e-9) for binary representation error, no more."""

    def rounds(recorded: float, claim: float) -> bool:
        c = check_consistency(
            [recorded, recorded], value=claim, decimals=1, spread=0.0, spread_type="std",
            n_seeds=2,
        )  # fmt: skip
        return {k.name: k.passed for k in c.checks}["value_rounds"]

    assert rounds(93.15, 93.1) and rounds(93.05, 93.1) and not rounds(93.16, 93.1)
    for claim in (1.0, 1000.0):
        scale = max(1.0, claim)
        assert rounds(claim + 0.05 + 0.5e-9 * scale, claim)
        assert not rounds(claim + 0.05 + 1.5e-9 * scale, claim)
        assert rounds(claim - 0.05 - 0.5e-9 * scale, claim)
        assert not rounds(claim - 0.05 - 1.5e-9 * scale, claim)
    assert rounds(0.5 + 0.05 + 0.5e-9, 0.5) and not rounds(0.5 + 0.05 + 1.5e-9, 0.5)


def test_a_ci_across_the_lower_end_of_the_support_interval_is_inconclusive() -> None:
    """90% CI about (0.41, 0.79): its upper end is inside (0.5, 1.5), its lower end is not."""
    r = claim_verdict([0.4, 0.8, 0.6, 0.6], **CLAIM)
    assert r.ci90[0] < 0.5 < r.ci90[1] < 1.5
    assert -0.5 < r.ci95[1] < 2.5
    assert r.verdict == "inconclusive" and not r.exceeds and r.seeds_needed is not None


def test_a_ci_across_the_upper_end_of_the_refute_interval_does_not_exceed() -> None:
    """Two seeds 2 and 3: a 95% CI from far below -0.5 to far above 2.5 is not outside it."""
    r = claim_verdict([2.0, 3.0], **CLAIM)
    assert r.ci95[0] < -0.5 and r.ci95[1] > 2.5
    assert r.verdict == "inconclusive" and not r.exceeds
