"""Value claims where the first mutation run of round 6 found no test (ledger/audit/evaluate.py):
each test here failed with its mutant applied and passes without."""

from __future__ import annotations

import math

import pytest
from _audit_lab import Lab
from test_audit_evidence import SEEDS, claim, run_claims

from ledger.audit import audit


def test_a_claims_file_with_value_and_comparative_claims_judges_both(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    lab.seeds("base", [90.1, 90.3, 90.0, 90.2, 90.4])
    text = (
        "methods:\n  ours: {names: [exp]}\n  base: {names: [base]}\n"
        "claims:\n"
        + claim("value")
        + "  - {id: beats, kind: comparison, metric: test/acc, a: ours, b: base}\n"
    )
    result = audit(lab.store, lab.claims(text))
    assert [(c.id, c.verdict) for c in result.claims] == [
        ("value", "supported"),
        ("beats", "supported"),
    ]
    assert result.claims[1].statistics["methods"] == {"a": "ours", "b": "base"}


def test_a_one_run_claim_with_n_seeds_1_is_not_asked_to_count_its_runs(lab: Lab) -> None:
    lab.seeds("solo", [91.2])
    got = run_claims(lab, claim("one", runs="{names: [solo]}", spread=None, n_seeds=1))["one"]
    assert got.verdict == "supported"
    assert [c.name for c in got.checks] == [
        "claim_complete",
        "no_test_selection",
        "runs_reproducible",
    ]


def test_a_sem_claim_is_read_with_the_claims_n_seeds_not_the_runs_found(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)  # 8 runs, the paper says 10
    got = run_claims(lab, claim("c", spread=0.07, spread_type="sem", n_seeds=10))["c"]
    assert got.statistics["n_claimed"] == 10
    assert got.margin == pytest.approx(0.07 * math.sqrt(10))
    assert got.statistics["readings"]["sem"]["tost"]["n_original"] == 10
    assert [c.name for c in got.checks if c.passed is False][:1] == ["n_matches"]


def test_the_recorded_spread_gets_no_equivalence_test_of_its_own(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c", spread=None, spread_type=None))["c"]
    assert list(got.statistics["readings"]) == ["recorded"]
    assert "tost" not in got.statistics["readings"]["recorded"]
    assert got.margin_source == "recorded sd"


def test_a_claim_that_breaks_a_rule_of_the_whole_claim_says_claim(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    (bad,) = audit(lab.store, lab.claims("claims:\n" + claim("b", below="92"))).claims
    assert bad.verdict == "error"
    assert bad.reasons[0].startswith("line 2: claim: give exactly one of value"), bad.reasons


def test_a_bare_value_over_several_runs_is_judged_on_their_mean(lab: Lab) -> None:
    """No ± and no n_seeds, 8 runs found: the mean of the 8 (with their own sd as margin) is
    judged, not the first run alone."""
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c", spread=None, spread_type=None, n_seeds=None))["c"]
    assert got.margin_source == "recorded sd"
    assert got.statistics["summary"]["n"] == 8
    assert "single_run" not in got.statistics
    assert got.statistics["readings"]["recorded"]["verdict"]["verdict"] == "supported"
