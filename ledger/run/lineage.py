"""Replays and their originals: a replay records ``replay_of``, the run it reran, which may
itself be a replay. The first run of such a chain is the *original*."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LedgerError
from ..store import Store
from .ids import run_ref

if TYPE_CHECKING:
    from ..records.contract import Contract
    from ..records.run import Run

__all__ = ["code_source", "original_ids", "parent_run"]


def parent_run(store: Store, run: Run) -> Run | None:
    """The run ``run`` replays, or None for an original (or a parent no longer stored)."""
    from ..records.base import record_from_json
    from ..records.run import Run

    if run.replay_of is None:
        return None
    oid = store.refs.get(run_ref(run.replay_of))
    if oid is None:
        return None
    try:
        parent = record_from_json(store.get_json(oid), Run)
    except LedgerError:
        return None
    return parent if isinstance(parent, Run) else None


def code_source(store: Store, run: Run, contract: Contract) -> str:
    """The stored code snapshot to rebuild ``run`` from.

    Replays record the snapshot they were rebuilt from, so this is ``contract.code``. A replay
    recorded before that holds a snapshot of its deleted workspace; the oldest run up its chain
    with the same code digest has the same code in a form that can be rebuilt."""
    from ..records.base import record_from_json
    from ..records.contract import Contract

    best = contract.code
    seen = {run.run_id}
    current = parent_run(store, run)
    while current is not None and current.contract is not None and current.run_id not in seen:
        seen.add(current.run_id)
        try:
            parent = record_from_json(store.get_json(current.contract), Contract)
        except LedgerError:
            break
        if not isinstance(parent, Contract) or parent.code_digest != contract.code_digest:
            break
        best = parent.code
        current = parent_run(store, current)
    return best


def original_ids(replay_of: dict[str, str | None]) -> dict[str, str]:
    """run id -> id of its original (itself for an original), from a run id -> ``replay_of``
    map. A replay whose chain leaves the map ends at the last run found."""
    out: dict[str, str] = {}
    for run_id in replay_of:
        current, seen = run_id, {run_id}
        while (parent := replay_of.get(current)) is not None and parent in replay_of:
            if parent in seen:
                break
            seen.add(parent)
            current = parent
        out[run_id] = current
    return out
