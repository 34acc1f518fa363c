"""Foreign refs entering a local ledger (import, pull).

Each ref the local ledger lacks is created under one ``import`` log line that names the origin
ledger's id and its chain head when the package or remote was made, so the local chain records
where every foreign run came from and the origin's own chain can be checked against that head.
A ref the local ledger already holds is left alone: equal, it is already here; different, it
is a collision, reported and never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..store import Store

__all__ = ["RefsReport", "import_refs"]

# Sources and runs first: a verdict or checkpoint line then names records already here.
_ORDER = ("sources/", "runs/", "verdicts/", "checkpoints/")


@dataclass
class RefsReport:
    added: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already here, same object
    collisions: list[tuple[str, str, str]] = field(default_factory=list)  # name, here, theirs


def _rank(name: str) -> tuple[int, str]:
    for i, prefix in enumerate(_ORDER):
        if name.startswith(prefix):
            return i, name
    return len(_ORDER), name


def import_refs(store: Store, refs: dict[str, str], *, origin: dict[str, Any]) -> RefsReport:
    """Create every ref of ``refs`` the store lacks; its objects must all be present."""
    report = RefsReport()
    note = {"origin": origin.get("ledger"), "origin_head": origin.get("head")}
    for name in sorted(refs, key=_rank):
        oid = refs[name]
        here = store.create_ref(name, oid, op="import", **note)
        if here is None:
            report.added.append(name)
        elif here == oid:
            report.present.append(name)
        else:
            report.collisions.append((name, here, oid))
    return report
