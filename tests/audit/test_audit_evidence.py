"""Bad claims get their own error verdict; run selection, checkpoints and replay evidence."""

from __future__ import annotations

import pytest
from _audit_lab import Lab

from ledger.audit import ReplayCheck, audit
from ledger.errors import UsageError
from ledger.records.audit import ClaimAudit
from ledger.store import Store

SEEDS = [91.2 + d for d in (-0.3, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.3)]


def claim(cid: str, runs: str = "{names: [exp]}", **fields: object) -> str:
    """A claim that is supported by SEEDS unless ``fields`` change it."""
    base: dict[str, object] = {
        "metric": "test/acc",
        "value": "91.2",
        "spread": 0.2,
        "spread_type": "std",
        "n_seeds": 8,
        "split": "test",
        "varied_sources": "[seed]",
    }
    base.update(fields)
    lines = [f"  - id: {cid}", f"    runs: {runs}"]
    lines += [f"    {k}: {v}" for k, v in base.items() if v is not None]
    return "\n".join(lines) + "\n"


def run_claims(lab: Lab, *claims: str, **kw: object) -> dict[str, ClaimAudit]:
    result = audit(lab.store, lab.claims("claims:\n" + "".join(claims)), **kw)  # type: ignore[arg-type]
    return {c.id: c for c in result.claims}


def test_bad_claims_get_error_verdicts_and_do_not_hide_the_others(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    lab.seeds("solo", [91.0])
    got = run_claims(
        lab,
        claim("ok"),
        claim("typo", metric="test/acc", value="abc"),
        claim("no-metric", metric="test/top1"),
        claim("no-runs", runs="{names: [nothing-*]}"),
        claim("one-run", runs="{names: [solo]}", n_seeds=1),
        claim("tiny-margin", margin=0.01),
    )
    assert {k: c.verdict for k, c in got.items()} == {
        "ok": "supported",
        "typo": "error",
        "no-metric": "error",
        "no-runs": "error",
        "one-run": "error",
        "tiny-margin": "error",
    }
    assert got["typo"].problems[0].field == "value"
    assert got["typo"].reasons == [
        "line 14: value: Input should be a valid number, unable to "
        "parse string as a number (got 'abc')"
    ]
    assert got["no-metric"].reasons == [
        "unknown metric 'test/top1': the 8 selected run(s) record test/acc"
    ]
    assert got["no-runs"].reasons[0].startswith("no recorded run matches runs: names nothing-*")
    assert "a std (and any confidence interval) needs at least 2" in got["one-run"].reasons[0]
    assert "rounding half-width" in got["tiny-margin"].reasons[0]


def test_claim_that_lacks_n_spread_or_split_is_not_reproducible(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(
        lab,
        claim("no-n", n_seeds=None),
        claim("no-spread", spread=None, spread_type=None),
        claim("no-split", split=None),
        claim("no-sources", varied_sources=None),
    )
    assert got["no-spread"].margin_source == "recorded sd"
    assert got["no-n"].margin_source == "claimed sd"
    for cid, missing in [("no-n", "n_seeds"), ("no-spread", "spread"), ("no-split", "split")]:
        assert got[cid].verdict == "not_reproducible", cid
        assert any(f"missing: {missing}" in r for r in got[cid].reasons), got[cid].reasons
    assert got["no-sources"].verdict == "not_reproducible"
    assert any("does not say what varied" in r for r in got["no-sources"].reasons)


def test_runs_far_from_the_claim_are_not_supported_and_flag_exceeds(lab: Lab) -> None:
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("low", value="90.0"), claim("high", value="92.5"))
    assert got["low"].verdict == "not_supported" and got["low"].exceeds
    assert got["low"].reasons[0].startswith("95% CI")
    assert "exceeds" in got["low"].reasons[1]
    assert got["high"].verdict == "not_supported" and not got["high"].exceeds


def test_selection_by_ids_tags_contract_and_skipped_runs(lab: Lab) -> None:
    ids = lab.seeds("exp", SEEDS, tags={"arch": "resnet"})
    lab.seeds("other", SEEDS, tags={"arch": "vit"})  # another contract (the stub holds the name)
    lab.add("failed-run", {"test/acc": [(0, 50.0)]}, name="exp", status="failed")
    lab.add("replay-run", {"test/acc": [(0, 91.2)]}, name="exp", replay_of=ids[0])
    lab.add("nan-run", {"test/acc": [(0, 91.0), (1, float("nan"))]}, name="exp")
    contract = lab.store.get_json(lab.store.refs.get(f"runs/{ids[0]}") or "")["contract_digest"]
    got = run_claims(
        lab,
        claim("by-name", runs="{names: ['ex?']}"),
        claim("by-ids", runs="{ids: [exp-0, exp-01]}", n_seeds=None),
        claim("by-tag", runs="{tags: {arch: resnet}}"),
        claim("by-contract", runs=f"{{contract: '{contract[3:15]}'}}", n_seeds=None),
    )
    by_name = got["by-name"]
    assert by_name.verdict == "supported"
    notes = {e.run_id: e.note for e in by_name.runs if not e.used}
    assert notes["failed-run"] == "run failed; only succeeded runs are used"
    assert notes["replay-run"] is not None and "a replay of exp-00" in notes["replay-run"]
    assert notes["nan-run"] == "final test/acc is nan"
    assert len(got["by-ids"].values) == 8  # "exp-0" is a prefix of exp-00 .. exp-07
    assert got["by-tag"].verdict == "supported"
    assert {e.run_id for e in got["by-contract"].runs} == {e.run_id for e in by_name.runs}


def test_best_val_checkpoint_takes_test_at_the_best_val_step(lab: Lab) -> None:
    for i, v in enumerate(SEEDS):
        lab.add(
            f"exp-{i}",
            {
                "test/acc": [(0, v - 1), (1, v), (2, v - 3)],
                "val/acc": [(0, 80.0), (1, 85.0), (2, 84.0)],
            },
            name="exp",
        )
    got = run_claims(
        lab,
        claim("final", checkpoint="final"),
        claim("best-val", checkpoint="best-val"),
        claim("best-test", checkpoint="best-test"),
        claim("no-val", checkpoint="best-val", metric="test/acc", selection_metric="dev/acc"),
    )
    assert got["final"].verdict == "not_supported"
    assert got["best-val"].verdict == "supported"
    assert {e.step for e in got["best-val"].runs} == {1}
    assert got["best-val"].runs[0].note == "step 1: best val/acc 85"
    # Choosing the checkpoint on test is flagged even though the number matches.
    best_test = got["best-test"]
    assert best_test.verdict == "not_reproducible"
    assert [c.name for c in best_test.checks if c.passed is False] == ["no_test_selection"]
    assert got["no-val"].verdict == "error"


def test_resolved_config_marks_test_selection(lab: Lab) -> None:
    for i, v in enumerate(SEEDS):
        config = {"trainer": {"early_stopping": {"monitor": "acc", "selection_split": "test"}}}
        lab.add(f"exp-{i}", {"test/acc": [(0, v)]}, name="exp", config=config)
    got = run_claims(lab, claim("cfg"))
    assert got["cfg"].verdict == "not_reproducible"
    detail = next(c.detail for c in got["cfg"].checks if c.name == "no_test_selection")
    assert detail.startswith("config trainer.early_stopping.selection_split=test on 8 runs")


def _verdict(store: Store, original: str, outcome: str, replay: str = "r") -> None:
    """A verdict on ``original`` by its replay ``<original>-<replay>`` (a verdict is written
    once: a later one is another replay's, and the newest counts)."""
    oid = store.put_json(
        {
            "kind": "verdict",
            "schema": 1,
            "original": original,
            "replays": [f"{original}-{replay}"],
            "mode": "tolerance",
            "outcome": outcome,
            "summary": f"{outcome} in test",
            "created": f"2026-11-30T07:00:0{len(replay)}.000000Z",
        }
    )
    store.set_ref(f"verdicts/{original}/{original}-{replay}", oid, op="verdict")


def test_recorded_replay_verdicts_are_evidence(lab: Lab) -> None:
    ids = lab.seeds("exp", SEEDS)
    for run_id in ids:
        _verdict(lab.store, run_id, "reproduced")
    got = run_claims(lab, claim("all-good"))
    assert got["all-good"].verdict == "supported"
    assert {e.replay for e in got["all-good"].runs} == {"reproduced"}
    assert got["all-good"].runs[0].replay_detail == "reproduced (tolerance): reproduced in test"
    assert next(c for c in got["all-good"].checks if c.name == "runs_reproducible").passed

    _verdict(lab.store, ids[3], "not-reproduced", replay="r2")
    got = run_claims(lab, claim("one-bad"))
    assert got["one-bad"].verdict == "not_reproducible"
    assert any(f"{ids[3]} not-reproduced" in r for r in got["one-bad"].reasons)


def test_replay_seam_calls_the_replayer_once_per_run(lab: Lab) -> None:
    ids = lab.seeds("exp", SEEDS)
    calls: list[str] = []

    def replayer(store: Store, run_id: str) -> ReplayCheck:
        calls.append(run_id)
        return ReplayCheck("could-not-replay" if run_id == ids[0] else "reproduced", "bitwise")

    got = run_claims(lab, claim("a"), claim("b"), replay=True, replayer=replayer)
    assert sorted(calls) == ids  # two claims, same runs: each replayed once
    assert got["a"].verdict == "not_reproducible"
    assert got["a"].runs[0].replay == "could-not-replay"
    with pytest.raises(UsageError, match="needs a replayer"):
        run_claims(lab, claim("c"), replay=True)
    with pytest.raises(UsageError, match="margin must be a positive number"):
        run_claims(lab, claim("d"), margin=0.0)
