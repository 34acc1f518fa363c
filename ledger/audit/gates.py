"""``require_gate: true`` in a claim: the checkpoint of every run behind it (its ``latest``)
must have a passing ``ledger gate`` record, the newest gate of that checkpoint deciding."""

from __future__ import annotations

from typing import Any

from ..errors import LedgerError
from ..records.audit import AuditCheck
from ..store import Store

__all__ = ["gate_check"]


def _latest_gates(store: Store) -> dict[str, dict[str, Any]]:
    """checkpoint digest -> its newest gate record, of the gate refs the log backs
    (``ledger.run.find.backed_refs``: a gate ref file written behind its back is no evidence)."""
    from ..run.find import backed_refs

    newest: dict[str, dict[str, Any]] = {}
    for _, oid in backed_refs(store, "gates/"):
        try:
            rec = store.get_json(oid)
        except LedgerError:
            continue
        if not isinstance(rec, dict) or rec.get("kind") != "gate":
            continue
        digest = rec.get("checkpoint_digest")
        if isinstance(digest, str) and str(rec.get("created")) >= str(
            newest.get(digest, {}).get("created", "")
        ):
            newest[digest] = rec | {"oid": oid}
    return newest


def gate_check(store: Store, run_ids: list[str]) -> AuditCheck:
    gates = _latest_gates(store)
    missing: list[str] = []
    failing: list[str] = []
    passing: list[str] = []
    from ..run.find import backed_ref

    for run_id in run_ids:
        try:
            ckpt = backed_ref(store, f"checkpoints/{run_id}/latest")
        except LedgerError as e:
            missing.append(f"{run_id}'s checkpoint is not taken: {e.message}")
            continue
        if ckpt is None:
            missing.append(f"{run_id} has no checkpoint")
            continue
        gate = gates.get(ckpt)
        if gate is None:
            missing.append(f"{run_id}'s checkpoint {ckpt[:15]}… has no gate")
        elif not gate.get("passed"):
            failing.append(f"{run_id}: {gate.get('gate_id')} failed")
        else:
            passing.append(f"{run_id}: {gate.get('gate_id')}")
    ok = not missing and not failing and bool(run_ids)
    detail = "; ".join(failing + missing) if not ok else "passed: " + ", ".join(passing)
    return AuditCheck(name="delivery_gate", passed=ok, detail=detail or "no runs used")
