"""Claim audits: rounding, spread readings, consistency checks and verdicts (STATS.md section 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ledger.stats import (
    check_consistency,
    claim_tost,
    claim_verdict,
    combine_verdicts,
    expected_range,
    rounding_halfwidth,
    seeds_needed,
    sigma_readings,
    spread_to_sigma,
)

# STATS.md's TOST worked example.
SEEDS = [92.9, 93.2, 93.0, 93.3, 92.8]
# STATS.md's consistency figures (mean 93.1, std 0.1581 / 0.1414, sem 0.0707) are those of these
# seeds; the TOST seeds above give mean 93.04 and std 0.2074 (see test_tost_seeds_consistency).
EVEN_SEEDS = [92.9, 93.0, 93.1, 93.2, 93.3]


def test_rounding_halfwidth() -> None:
    assert rounding_halfwidth(1) == pytest.approx(0.05)
    assert rounding_halfwidth(0) == 0.5
    assert rounding_halfwidth(-2) == 50.0


def test_claim_tost_worked_example() -> None:
    r = claim_tost(SEEDS, value=93.1, sigma=0.2, n=5, margin=0.3)
    assert r.delta == pytest.approx(-0.06)
    assert r.se == pytest.approx(0.1288, abs=5e-5)
    assert r.df == pytest.approx(7.99, abs=5e-3)
    assert r.ci90 == pytest.approx((-0.2996, 0.1796), abs=5e-5)
    assert r.p_tost == pytest.approx(0.0498, abs=5e-5)
    assert claim_tost(SEEDS, value=93.1, sigma=0.2, n=5, margin=0.5).p_tost == pytest.approx(
        0.00459, abs=5e-6
    )


def test_spread_readings_for_plus_minus_0_2_with_5_seeds() -> None:
    assert spread_to_sigma(0.2, "std", 5) == 0.2
    assert spread_to_sigma(0.2, "sem", 5) == pytest.approx(0.4472, abs=5e-5)
    assert spread_to_sigma(0.2, "ci", 5) == pytest.approx(0.1611, abs=5e-5)
    assert spread_to_sigma(0.2, "ci", 5, level=0.99) < spread_to_sigma(0.2, "ci", 5)
    readings = sigma_readings(0.2, "unspecified", 5)
    assert readings == pytest.approx({"std": 0.2, "sem": 0.4472}, abs=5e-5)
    assert sigma_readings(0.2, "sem", 5) == pytest.approx({"sem": 0.4472}, abs=5e-5)


@pytest.mark.parametrize(("n", "d2"), [(2, 1.128), (3, 1.693), (4, 2.059), (5, 2.326), (10, 3.078)])
def test_expected_range_matches_the_d2_table(n: int, d2: float) -> None:
    assert expected_range(n) == pytest.approx(d2, abs=5e-4)


def test_range_reads_plus_minus_as_half_the_range() -> None:
    assert spread_to_sigma(0.2, "range", 5) == pytest.approx(0.4 / 2.326, abs=1e-3)


def test_stats_md_consistency_example() -> None:
    report = check_consistency(
        EVEN_SEEDS, value=93.1, decimals=1, spread=0.2, spread_type="std", n_seeds=5
    )
    assert report.recorded_value == pytest.approx(93.1)
    assert report.readings == pytest.approx(
        {"std_ddof1": 0.1581, "std_ddof0": 0.1414, "sem": 0.0707}, abs=5e-5
    )
    assert report.matching_readings == ("std_ddof1",)
    assert report.ok
    as_sem = check_consistency(
        EVEN_SEEDS, value=93.1, decimals=1, spread=0.2, spread_type="sem", n_seeds=5
    )
    assert not as_sem.ok
    assert [c.name for c in as_sem.checks if not c.passed] == ["spread_rounds"]


def test_tost_seeds_consistency() -> None:
    report = check_consistency(
        SEEDS, value=93.1, decimals=1, spread=0.2, spread_type="std", n_seeds=5
    )
    assert report.recorded_value == pytest.approx(93.04)
    assert report.readings["std_ddof1"] == pytest.approx(0.2074, abs=5e-5)
    assert not report.ok
    assert [c.name for c in report.checks if not c.passed] == ["value_rounds"]


def test_n_mismatch_and_best_seed_claims_are_flagged() -> None:
    seeds = [90.0, 90.5, 91.0, 93.1, 90.2]
    report = check_consistency(
        seeds, value=93.1, decimals=1, spread=1.3, spread_type="unspecified", n_seeds=3
    )
    failed = {c.name for c in report.checks if not c.passed}
    assert failed == {"n_matches", "value_rounds", "not_best_seed"}
    lower_better = check_consistency(
        [5.0, 4.2, 4.9],
        value=4.2,
        decimals=1,
        spread=0.4,
        spread_type="std",
        n_seeds=3,
        higher_is_better=False,
    )
    assert "not_best_seed" in {c.name for c in lower_better.checks if not c.passed}
    stated = check_consistency(
        seeds, value=93.1, decimals=1, spread=1.2, spread_type="std", n_seeds=5, aggregate="max"
    )
    assert {c.name: c.passed for c in stated.checks}["not_best_seed"]


def test_supported_not_supported_and_exceeds() -> None:
    rng = np.random.default_rng(11)
    tight = 93.1 + rng.normal(0, 0.05, 20)
    supported = claim_verdict(tight, value=93.1, decimals=1, margin=0.3)
    assert supported.verdict == "supported" and supported.seeds_needed is None
    assert supported.support_interval == pytest.approx((92.85, 93.35))
    lo, hi = supported.support_interval
    assert lo < supported.ci90[0] < supported.ci90[1] < hi

    below = claim_verdict(tight - 1.0, value=93.1, decimals=1, margin=0.3)
    assert below.verdict == "not_supported" and not below.exceeds
    above = claim_verdict(tight + 1.0, value=93.1, decimals=1, margin=0.3)
    assert above.verdict == "not_supported" and above.exceeds
    assert above.ci95[0] > above.refute_interval[1]
    assert any("above" in line for line in above.evidence)
    json.dumps(above.to_json(), allow_nan=False)


def test_rounding_decides_at_the_edge() -> None:
    # A CI inside [c - delta, c + delta] but not inside [c + r - delta, c - r + delta].
    values = 93.1 + 0.27 + np.array([-0.01, 0.0, 0.01, 0.0, 0.0])
    result = claim_verdict(values, value=93.1, decimals=1, margin=0.3)
    assert result.ci90[1] < 93.1 + 0.3
    assert result.verdict == "inconclusive"


def test_inconclusive_reports_one_sample_seeds_needed() -> None:
    result = claim_verdict(SEEDS, value=93.1, decimals=1, margin=0.3)
    assert result.verdict == "inconclusive"
    expected = seeds_needed(0.3 - 0.05, float(np.std(SEEDS, ddof=1)), design="one-sample")
    assert result.seeds_needed == expected


def test_combine_verdicts() -> None:
    assert combine_verdicts(["supported", "supported"]) == "supported"
    assert combine_verdicts(["supported", "not_supported"]) == "inconclusive"
    with pytest.raises(ValueError, match="at least one verdict"):
        combine_verdicts([])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: claim_verdict([93.0], value=93.1, decimals=1, margin=0.3), "at least 2"),
        (lambda: claim_verdict(SEEDS, value=93.1, decimals=1, margin=0.05), "rounding half"),
        (lambda: claim_verdict(SEEDS, value=93.1, decimals=1, margin=-1), "margin must be"),
        (
            lambda: claim_verdict([93.0, float("nan")], value=93.1, decimals=1, margin=0.3),
            "non-finite value nan",
        ),
        (lambda: spread_to_sigma(0.2, "std", 1), "n must be an integer >= 2"),
        (lambda: spread_to_sigma(-0.2, "std", 5), "spread must be"),
        (lambda: spread_to_sigma(0.2, "unspecified", 5), "use sigma_readings"),
        (lambda: spread_to_sigma(0.2, "iqr", 5), "unknown spread type"),  # type: ignore[arg-type]
        (lambda: rounding_halfwidth(1.5), "decimals must be an integer"),  # type: ignore[arg-type]
        (
            lambda: check_consistency(
                [], value=1.0, decimals=1, spread=0.1, spread_type="std", n_seeds=1
            ),
            "values needs at least one value",
        ),
        (
            lambda: check_consistency(
                [1.0, 2.0],
                value=1.0,
                decimals=1,
                spread=0.1,
                spread_type="std",
                n_seeds=2,
                aggregate="mode",  # type: ignore[arg-type]
            ),
            "unknown aggregate",
        ),
        (lambda: claim_tost(SEEDS, value=93.1, sigma=-1, n=5, margin=0.3), "sigma must be"),
    ],
)
def test_bad_input(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
