"""The check and gate records bound to a run, for ``ledger show`` (no torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LedgerError
from ..store import Store

if TYPE_CHECKING:
    from ..index import Index

__all__ = ["linked_checks"]


def linked_checks(store: Store, run_id: str, index: Index) -> list[dict[str, Any]]:
    """``checks/*`` and ``gates/*`` records whose ``run_id`` is ``run_id``, oldest first. The
    index (synced by the caller) names the candidates, so a ledger's other checks are not
    read; each is read back from the record its ref names, which decides."""
    out: list[dict[str, Any]] = []
    rows = index.query("SELECT ref FROM checks WHERE run_id = ? ORDER BY ref", (run_id,))
    for row in rows:
        name = str(row["ref"])
        oid = store.refs.get(name)
        if oid is None:
            continue  # deleted since the sync
        try:
            rec = store.get_json(oid)
        except LedgerError:
            continue  # verify reports a missing or corrupt record
        if not isinstance(rec, dict) or rec.get("run_id") != run_id:
            continue
        failed = [
            f"{i.get('level')}/{i.get('name')}"
            for i in rec.get("items", [])
            if isinstance(i, dict) and i.get("required", True) and i.get("passed") is False
        ]
        out.append(
            {
                "kind": rec.get("kind"),
                "id": name.split("/", 1)[1],
                "oid": oid,
                "created": rec.get("created"),
                "passed": rec.get("passed"),
                "failed": failed,
                "checkpoint_digest": rec.get("checkpoint_digest"),
            }
        )
    return sorted(out, key=lambda c: str(c["created"]))
