"""Verdicts of value claims at their edges (mutation round 6, ledger/audit/evaluate.py): a failed
delivery gate on a claim the numbers leave open or refute, a claim over exactly two runs, runs
that all give the same number, a claimed ± equal to the rounding, IQM and CI claims, the runs a
claim over several needs when only one is found, and how test-split selection is named."""

from __future__ import annotations

import pytest
from _audit_lab import Lab
from test_audit_evidence import SEEDS, claim, run_claims
from test_audit_require_gate import _checkpoint, _gate

from ledger.audit import audit
from ledger.stats import seeds_needed


def test_a_failed_gate_turns_an_open_claim_not_reproducible_and_leaves_a_refuted_one(
    lab: Lab,
) -> None:
    ids = lab.seeds("exp", SEEDS)
    # a margin of 0.1 against a spread of 0.2 over 8 runs: the intervals leave it open
    open_claim = claim("open", margin=0.1)
    assert run_claims(lab, open_claim)["open"].verdict == "inconclusive"
    for run_id in ids:
        _gate(lab, _checkpoint(lab, run_id), passed=False)
    got = run_claims(
        lab,
        claim("open", margin=0.1, require_gate="true"),
        claim("refuted", value="90.0", require_gate="true"),
    )
    assert got["open"].verdict == "not_reproducible"
    assert got["open"].seeds_needed is None  # more seeds do not mend a failed gate
    assert not any("seeds would settle it" in r for r in got["open"].reasons), got["open"].reasons
    # the numbers already refute it: the gate is one more reason, not the verdict
    assert got["refuted"].verdict == "not_supported"
    assert got["refuted"].exceeds
    assert any("no passing delivery gate" in r for r in got["refuted"].reasons)


def test_a_claim_left_open_that_fails_a_check_asks_for_no_more_seeds(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("open", margin=0.1), claim("open-no-split", margin=0.1, split=None))
    assert got["open"].verdict == "inconclusive"
    assert got["open"].seeds_needed is not None
    assert got["open-no-split"].verdict == "not_reproducible"
    assert got["open-no-split"].seeds_needed is None
    assert got["open-no-split"].reasons == [
        "the claim does not state everything a reproduction needs (missing: split)",
        got["open"].reasons[0],  # the statistical line, after the failed check
    ]


def test_a_claim_over_two_runs_that_finds_one_says_what_it_needs(lab: Lab) -> None:
    lab.seeds("solo", [91.2])
    got = run_claims(
        lab,
        claim("mean-of-2", runs="{names: [solo]}", spread=None, n_seeds=2),
        claim("std-of-2", runs="{names: [solo]}", n_seeds=2),
    )
    assert got["mean-of-2"].verdict == "error"
    assert got["mean-of-2"].statistics == {"needs": "a mean of 2 runs claim needs 2+ runs, 1 found"}
    assert got["std-of-2"].statistics == {"needs": "a std claim needs 2+ runs, 1 found"}
    # the claimed sd 0.2 is the margin; 0.2 - rounding 0.05 is what the runs must resolve
    need = seeds_needed(0.2 - 0.05, 0.2, design="one-sample")
    assert got["std-of-2"].reasons == [
        "1 run(s) give a value for 'test/acc'; a std (and any confidence interval) needs at "
        f"least 2; with the claimed spread about {need} runs would be needed"
    ]


def test_the_runs_needed_follow_a_given_margin_and_not_one_the_rounding_swallows(
    lab: Lab,
) -> None:
    lab.seeds("solo", [2.8217], metric="val/loss")
    base = {"metric": "val/loss", "value": "2.82", "spread": 0.01, "n_seeds": 5}
    got = run_claims(
        lab,
        claim("default", runs="{names: [solo]}", **base),  # type: ignore[arg-type]
        claim("given", runs="{names: [solo]}", margin=0.02, **base),  # type: ignore[arg-type]
        claim("at-rounding", runs="{names: [solo]}", margin=0.005, **base),  # type: ignore[arg-type]
        claim("exact", runs="{names: [solo]}", **{**base, "spread": 0.0}),  # type: ignore[arg-type]
        claim("unspecified", runs="{names: [solo]}", spread_type="unspecified", **base),  # type: ignore[arg-type]
    )

    def needed(margin: float) -> str:
        n = seeds_needed(margin - 0.005, 0.01, design="one-sample")
        return f"; with the claimed spread about {n} runs would be needed"

    assert got["default"].reasons[0].endswith(needed(0.01))
    assert got["given"].reasons[0].endswith(needed(0.02))
    # a margin no wider than the rounding, a spread of 0, or a ± that may be std or sem: no
    # number of runs can be named
    for cid in ("at-rounding", "exact", "unspecified"):
        assert got[cid].verdict == "error"
        assert got[cid].reasons[0].endswith("needs at least 2"), got[cid].reasons


def test_a_claimed_spread_over_exactly_two_runs_is_read_as_the_claims(lab: Lab) -> None:
    lab.seeds("pair", [91.1, 91.3])  # sd 0.1414
    got = run_claims(lab, claim("c", runs="{names: [pair]}", spread=0.14, n_seeds=2))["c"]
    assert got.margin_source == "claimed sd"
    assert got.margin == pytest.approx(0.14)
    assert list(got.statistics["readings"]) == ["std"]
    assert "tost" in got.statistics["readings"]["std"]


def test_runs_that_all_give_the_same_number_get_the_rounding_margin(lab: Lab) -> None:
    lab.seeds("same", [91.2, 91.2, 91.2, 91.2])
    got = run_claims(lab, claim("c", runs="{names: [same]}", spread=None, n_seeds=4))["c"]
    assert got.statistics["readings"]["recorded"]["sigma"] == 0.0
    assert got.margin_source == "twice the rounding half-width"
    assert got.margin == pytest.approx(0.1)


def test_a_claimed_spread_equal_to_the_rounding_gives_twice_the_rounding(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    # ± 0.05 on a value printed with one decimal: the claimed sd is the rounding half-width
    got = run_claims(lab, claim("c", spread=0.05))["c"]
    assert got.verdict != "error", got.reasons
    assert got.margin_source == "twice the rounding half-width"
    assert got.margin == pytest.approx(0.1)


def test_an_iqm_claim_is_judged_on_the_mean_and_says_so(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c", aggregate="iqm"))["c"]
    assert got.verdict == "supported"
    assert got.statistics["readings"]["std"]["verdict"]["verdict"] == "supported"
    assert got.reasons[-1] == "the verdict tests the mean of the runs; the claim reports the iqm"


def test_a_median_claim_over_several_runs_is_judged_on_the_mean_and_says_so(lab: Lab) -> None:
    """Round 14: "median" sorts after "mean" (and "iqm" before it): a median claim with a ±
    tells the aggregate's `!=` from `<`."""
    lab.seeds("exp", SEEDS)  # median 91.2, as the mean
    got = run_claims(lab, claim("c", aggregate="median"))["c"]
    assert got.verdict == "supported", got.reasons
    assert got.reasons[-1] == (
        "the verdict tests the mean of the runs; the claim reports the median"
    )


def test_a_ci_claim_gets_its_equivalence_test(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c", spread=0.17, spread_type="ci"))["c"]
    assert list(got.statistics["readings"]) == ["ci"]
    ci = got.statistics["readings"]["ci"]
    assert ci["tost"]["n_replay"] == 8 and ci["tost"]["margin"] == ci["margin"], ci["tost"]


def test_readings_of_an_unspecified_spread_that_agree_add_no_note(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    # ± 0.2 read as a std (margin 0.2) or as a sem (0.57): both support 91.2
    got = run_claims(lab, claim("c", spread_type="unspecified"))["c"]
    verdicts = {k: v["verdict"]["verdict"] for k, v in got.statistics["readings"].items()}
    assert verdicts == {"std": "supported", "sem": "supported"}
    assert got.verdict == "supported"
    assert not any("disagree" in r for r in got.reasons), got.reasons


def test_a_median_bound_over_two_runs_says_the_mean_is_tested(lab: Lab) -> None:
    lab.seeds("pair", [2.70, 2.72], metric="val/loss")
    got = run_claims(
        lab,
        claim(
            "c",
            runs="{names: [pair]}",
            metric="val/loss",
            value=None,
            spread=None,
            below="3.0",
            higher_is_better="false",
            aggregate="median",
            n_seeds=2,
        ),
    )["c"]
    assert got.reasons[-1] == "the verdict tests the mean of the runs; the claim reports the median"


def test_an_iqm_bound_over_several_runs_says_the_mean_is_tested(lab: Lab) -> None:
    """Round 14: "iqm" sorts before "mean" (and "median" after it), so an IQM bound is the one
    that tells the aggregate's `!=` from `>`."""
    lab.seeds("four", [2.70, 2.72, 2.71, 2.73], metric="val/loss")
    got = run_claims(
        lab,
        claim(
            "c",
            runs="{names: [four]}",
            metric="val/loss",
            value=None,
            spread=None,
            below="3.0",
            higher_is_better="false",
            aggregate="iqm",
            n_seeds=4,
        ),
    )["c"]
    assert got.verdict == "supported", got.reasons
    assert got.reasons[-1] == "the verdict tests the mean of the runs; the claim reports the iqm"


def test_test_split_selection_names_one_run_three_and_more(lab: Lab) -> None:
    marked = {"early_stopping": "test"}
    for i in range(3):
        lab.add(f"mix-{i:02d}", {"test/acc": [(0, 91.2)]}, name="mix")
        lab.add(f"three-{i:02d}", {"test/acc": [(0, 91.2)]}, name="three", tags=marked)
    for i in range(4):
        lab.add(f"four-{i:02d}", {"test/acc": [(0, 91.2)]}, name="four", tags=marked)
    lab.add("mix-03", {"test/acc": [(0, 91.2)]}, name="mix", tags=marked)

    def detail(names: str) -> str:
        got = run_claims(lab, claim("c", runs=f"{{names: [{names}]}}", n_seeds=None))["c"]
        check = next(c for c in got.checks if c.name == "no_test_selection")
        assert check.passed is False
        return check.detail

    assert detail("mix") == "tag early_stopping=test on run mix-03"
    assert detail("three") == "tag early_stopping=test on 3 runs (three-00, three-01, three-02)"
    assert detail("four") == "tag early_stopping=test on 4 runs (four-00, four-01, four-02, ...)"


def test_a_check_says_what_varied_and_what_the_claim_states(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c", varied_sources="[seed, data order]"))["c"]
    details = {c.name: c.detail for c in got.checks}
    assert details["variance_sources_stated"] == "seed, data order"
    assert details["claim_complete"] == "n_seeds, spread and split stated"
    got = run_claims(lab, claim("c", varied_sources="[]"))["c"]
    assert {c.name: c.detail for c in got.checks}["variance_sources_stated"] == (
        "varied_sources is empty"
    )


def test_a_claim_that_does_not_load_keeps_where_it_came_from(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    text = (
        "claims:\n"
        "  - id: bad\n"
        "    source: {paper: Doe 2026, table: '2', row: ResNet, note: not a source field}\n"
        + "".join(claim("x", value="abc").splitlines(keepends=True)[1:])
    )
    (bad,) = audit(lab.store, lab.claims(text)).claims
    assert bad.verdict == "error"
    assert bad.source == {"paper": "Doe 2026", "table": "2", "row": "ResNet"}


def test_a_best_of_n_claim_with_a_spread_is_never_supported_and_says_why(lab: Lab) -> None:
    """Round 14: "91.5 ± 0.2, best of 8 runs" matches the best of SEEDS, but a best-of-n value
    has no confidence interval: the claim stays open, no seeds are asked for, and the reasons
    end with why."""
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("best", value="91.5", aggregate="max"))["best"]
    assert got.verdict == "inconclusive", got.reasons
    assert got.seeds_needed is None
    assert got.reasons == [
        "a best-of-n value has no confidence interval: the claim can be checked for "
        "consistency only, never supported"
    ]
