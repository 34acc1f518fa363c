"""STATS.md section 4's worked examples, end to end through audit() and the stored record."""

from __future__ import annotations

import pytest
from _audit_lab import Lab

from ledger.audit import audit
from ledger.records.audit import ClaimAudit

TOST_SEEDS = [92.9, 93.2, 93.0, 93.3, 92.8]  # the TOST example: mean 93.04
EVEN_SEEDS = [92.9, 93.0, 93.1, 93.2, 93.3]  # the consistency figures: mean 93.1, sd 0.1581


def _claim(
    lab: Lab, seeds: list[float], *, spread_type: str = "std", extra: str = ""
) -> ClaimAudit:
    lab.seeds("exp", seeds)
    path = lab.claims(
        f"""\
claims:
  - id: top1
    metric: test/acc
    value: 93.1
    spread: 0.2
    spread_type: {spread_type}
    n_seeds: 5
    split: test
    varied_sources: [seed]
    runs: {{names: [exp]}}
{extra}"""
    )
    return audit(lab.store, path).claims[0]


@pytest.mark.parametrize(("margin", "p_tost"), [(0.3, 0.0498), (0.5, 0.00459)])
def test_tost_worked_example(lab: Lab, margin: float, p_tost: float) -> None:
    claim = _claim(lab, TOST_SEEDS, extra=f"    margin: {margin}\n")
    tost = claim.statistics["readings"]["std"]["tost"]
    assert tost["delta"] == pytest.approx(-0.06)
    assert tost["se"] == pytest.approx(0.1288, abs=5e-5)
    assert tost["df"] == pytest.approx(7.99, abs=5e-3)
    assert tost["p_tost"] == pytest.approx(p_tost, rel=2e-3)
    if margin == 0.3:
        assert tost["ci90"] == pytest.approx([-0.2996, 0.1796], abs=5e-5)
    assert claim.margin == margin and claim.margin_source == "given"
    # The example's seeds average 93.04, which prints as 93.0: the claim's 93.1 does not follow.
    assert claim.verdict == "not_reproducible"
    assert [c.name for c in claim.checks if c.passed is False] == ["value_rounds"]
    assert claim.reasons[0].startswith("the recorded value does not round")


def test_consistency_worked_example_reads_plus_minus_as_std_ddof1(lab: Lab) -> None:
    claim = _claim(lab, EVEN_SEEDS)
    consistency = claim.statistics["consistency"]
    assert consistency["recorded_value"] == pytest.approx(93.1)
    assert consistency["readings"] == pytest.approx(
        {"std_ddof1": 0.1581, "std_ddof0": 0.1414, "sem": 0.0707}, abs=5e-5
    )
    assert consistency["matching_readings"] == ["std_ddof1"]
    assert all(c.passed is not False for c in claim.checks)
    # Default margin: the claimed sd 0.2. Five seeds pin the mean to +-0.15: just not enough.
    assert claim.margin == pytest.approx(0.2) and claim.margin_source == "claimed sd"
    assert claim.verdict == "inconclusive" and claim.seeds_needed is not None


def test_consistency_worked_example_supported_at_margin_0_3(lab: Lab) -> None:
    claim = _claim(lab, EVEN_SEEDS, extra="    margin: 0.3\n")
    verdict = claim.statistics["readings"]["std"]["verdict"]
    assert verdict["support_interval"] == pytest.approx([92.85, 93.35])
    assert claim.verdict == "supported" and claim.seeds_needed is None


def test_sem_reading_of_the_same_claim_fails_the_spread_check(lab: Lab) -> None:
    claim = _claim(lab, EVEN_SEEDS, spread_type="sem")
    assert claim.statistics["readings"]["sem"]["sigma"] == pytest.approx(0.4472, abs=5e-5)
    assert [c.name for c in claim.checks if c.passed is False] == ["spread_rounds"]
    assert claim.verdict == "not_reproducible"


def test_ci_reading_gives_sigma_0_1611(lab: Lab) -> None:
    claim = _claim(lab, EVEN_SEEDS, spread_type="ci")
    assert claim.statistics["readings"]["ci"]["sigma"] == pytest.approx(0.1611, abs=5e-5)


def test_unspecified_spread_evaluates_both_readings(lab: Lab) -> None:
    claim = _claim(lab, EVEN_SEEDS, spread_type="unspecified")
    readings = claim.statistics["readings"]
    assert {k: v["sigma"] for k, v in readings.items()} == pytest.approx(
        {"std": 0.2, "sem": 0.4472}, abs=5e-5
    )
    # std reading: inconclusive at delta 0.2; sem reading: supported at delta 0.447.
    assert readings["std"]["verdict"]["verdict"] == "inconclusive"
    assert readings["sem"]["verdict"]["verdict"] == "supported"
    assert claim.verdict == "inconclusive"
    assert any("readings of ± disagree" in r for r in claim.reasons)
