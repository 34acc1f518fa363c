"""`require_gate: true`: a claim is supported only if every run's checkpoint passed its gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from _audit_lab import Lab
from test_audit_evidence import SEEDS, claim, run_claims

from ledger.gate.run import GateResult, store_gate
from ledger.records.check import CheckItem, Gate


def _checkpoint(lab: Lab, run_id: str) -> str:
    oid = lab.store.put_json({"kind": "checkpoint-stub", "schema": 1, "run_id": run_id})
    lab.store.set_ref(f"checkpoints/{run_id}/latest", oid, op="publish")
    return oid


def _gate(lab: Lab, digest: str, passed: bool, minutes: int = 0, by_hand: bool = False) -> None:
    item = CheckItem(level="poison", name="NaN", passed=passed, figure="x")
    rec = Gate(
        gate_id=f"gate-{digest[3:11]}-{minutes}",
        created=datetime(2026, 11, 30, 7, 0, tzinfo=UTC) + timedelta(minutes=minutes),
        checkpoint=digest,
        checkpoint_digest=digest,
        checkpoint_source="ledger",
        spec="m:f",
        items=[item],
        passed=passed,
        ledger_version="0.1.0",
    )
    if by_hand:  # a gate ref file written behind the log's back
        path = lab.store.refs.path_of(f"gates/{rec.gate_id}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lab.store.put_json(rec.to_json()) + "\n")
        return
    store_gate(lab.store, GateResult(rec))


def test_require_gate(lab: Lab) -> None:
    ids = lab.seeds("exp", SEEDS)
    plain = run_claims(lab, claim("plain"))["plain"]
    assert plain.verdict == "supported"
    assert all(c.name != "delivery_gate" for c in plain.checks)

    got = run_claims(lab, claim("gated", require_gate="true"))["gated"]
    assert got.verdict == "not_reproducible"
    assert any("has no checkpoint" in r for r in got.reasons), got.reasons

    digests = [_checkpoint(lab, i) for i in ids]
    for d in digests:
        _gate(lab, d, passed=True)
    got = run_claims(lab, claim("gated", require_gate="true"))["gated"]
    assert got.verdict == "supported", got.reasons
    (check,) = [c for c in got.checks if c.name == "delivery_gate"]
    assert check.passed and check.detail.startswith("passed: ")

    _gate(lab, digests[3], passed=False, minutes=5)  # a newer gate of one checkpoint fails
    got = run_claims(lab, claim("gated", require_gate="true"))["gated"]
    assert got.verdict == "not_reproducible"
    assert any("exp-03" in r and "no passing delivery gate" in r for r in got.reasons)


def test_a_gate_or_latest_the_log_does_not_back_is_no_evidence(lab: Lab) -> None:
    """A passing gate written by hand for a checkpoint whose real gate failed, and a ``latest``
    moved by hand to a checkpoint that passed: neither makes a gated claim supported."""
    ids = lab.seeds("exp", SEEDS)
    digests = [_checkpoint(lab, i) for i in ids]
    for d in digests[:-1]:
        _gate(lab, d, passed=True)
    _gate(lab, digests[-1], passed=False)
    _gate(lab, digests[-1], passed=True, minutes=5, by_hand=True)
    got = run_claims(lab, claim("gated", require_gate="true"))["gated"]
    assert got.verdict == "not_reproducible", got.reasons
    assert any(ids[-1] in r and "no passing delivery gate" in r for r in got.reasons)

    latest = lab.store.refs.path_of(f"checkpoints/{ids[-1]}/latest")
    latest.write_text(digests[0] + "\n")
    got = run_claims(lab, claim("gated", require_gate="true"))["gated"]
    assert got.verdict == "not_reproducible", got.reasons
    assert any(ids[-1] in r and "not backed by the log" in r for r in got.reasons), got.reasons
