"""Finding runs: by id, prefix, short id or name (``resolve_run``, ``load_run``), and listing
them (``list_runs``). Run ids themselves are made in ``ledger.run.ids``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import AmbiguousIdError, LedgerError, UnknownIdError
from ..index.short_ids import match_short_id
from ..records.base import record_from_json
from ..records.run import Run
from ..store import Store
from .ids import new_run_id, run_ref

if TYPE_CHECKING:
    from ..index.query import Filter

__all__ = ["load_run", "new_run_id", "resolve_run", "run_ref"]


def resolve_run(store: Store, text: str) -> str:
    """A run id from an id, a unique id prefix, or a run name (its newest original run)."""
    ids = [name.split("/", 1)[1] for name in store.refs.names("runs/")]  # sorted, not read
    if text in ids:
        return text
    matches = [i for i in ids if i.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise AmbiguousIdError(
            f"run id prefix {text!r} matches {len(matches)} runs",
            candidates=matches,
            hint="give more characters: " + ", ".join(matches[:5]),
        )
    by_name = [(i, record) for i in ids if (record := _record_of(store, i)).get("name") == text]
    # A replay carries its original's name but never takes it over: the name is the newest
    # original's; only when no original holds it any more does the newest replay answer.
    originals = [i for i, record in by_name if record.get("replay_of") is None]
    if originals or by_name:
        return (originals or [i for i, _ in by_name])[-1]
    by_short = match_short_id(ids, text)
    if len(by_short) == 1:
        return by_short[0]
    if len(by_short) > 1:
        raise AmbiguousIdError(
            f"short run id {text!r} matches {len(by_short)} runs",
            candidates=by_short,
            hint="give more characters: " + ", ".join(by_short[:5]),
        )
    raise UnknownIdError(
        f"no run {text!r} in {store.root}",
        hint="`ledger ls` lists runs; give an id, a unique id prefix, a short id, or a run name",
    )


def _record_of(store: Store, run_id: str) -> dict[str, Any]:
    """A run record's JSON, or {} when it cannot be read."""
    oid = store.refs.get(run_ref(run_id))
    if oid is None:
        return {}
    try:
        value = store.get_json(oid)
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}


def load_run(store: Store, text: str) -> tuple[str, Run]:
    """(record oid, Run) for an id, prefix or name."""
    run_id = resolve_run(store, text)
    oid = store.refs.get(run_ref(run_id))
    if oid is None:  # pragma: no cover - resolve_run found the ref
        raise UnknownIdError(f"run {run_id} has no record")
    run = record_from_json(store.get_json(oid), Run)
    assert isinstance(run, Run)
    return oid, run


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_runs(
    store: Store,
    *,
    name: str | None = None,
    status: str | None = None,
    tags: dict[str, str] | None = None,
    contract: str | None = None,
    limit: int = 50,
    replays: bool = False,
    warnings: list[str] | None = None,
    where: Sequence[Filter] = (),
    columns: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Original runs newest first, each with ``replays``, how many replays it has (replays of
    replays included). The filters and ``limit`` select originals; with ``replays=True``
    each is followed by its replays, oldest first, each with ``original`` set. Each row
    shown is rebuilt from its hashed record (``ledger.index.checked``); where the index
    disagrees, the record wins and a line is added to ``warnings``. A ``running`` run whose
    recorder process is gone on this host is reported as ``abandoned``. ``where``
    (``ledger.index.query``): only originals matching every filter, checked on the record;
    ``columns``: each row gets ``columns``, those values read from the record."""
    import json
    import socket

    from ..index import Index
    from ..index.checked import checked_runs
    from ..index.tables import run_values
    from .lineage import original_ids

    if contract is not None and not contract.startswith("b3:"):
        contract = "b3:" + contract
    host = socket.gethostname()

    def shown(row: dict[str, Any]) -> dict[str, Any]:
        row["tags"] = json.loads(row["tags"] or "{}")
        if row["status"] == "running" and row["host"] == host and not is_alive(int(row["pid"])):
            row["status"] = "abandoned"
        return row

    def extra(row: dict[str, Any]) -> dict[str, Any] | None:
        """The record's values, when filters or columns need them."""
        if not where and columns is None:
            return {}
        try:
            rec = store.get_json(row["oid"])
        except LedgerError:
            return None
        return run_values(store, rec if isinstance(rec, dict) else {})

    def select(
        index_rows: list[dict[str, Any]],
        notes: list[str],
        candidates: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        # Which runs are replays of which original comes from the index (cheap); each row shown
        # is then read back from its record.
        roots = original_ids({r["run_id"]: r["replay_of"] for r in index_rows})
        under: dict[str, list[dict[str, Any]]] = {}
        for r in index_rows:
            if r["replay_of"] is not None and roots[r["run_id"]] != r["run_id"]:
                under.setdefault(roots[r["run_id"]], []).append(r)
        out: list[dict[str, Any]] = []
        originals = 0
        walk = (
            checked_runs(store, index_rows, notes)
            if candidates is None
            else checked_runs(store, candidates, notes, every_run=False)
        )
        for row in walk:
            run_id = row["run_id"]
            if row["replay_of"] is not None and roots.get(run_id, run_id) != run_id:
                continue  # a replay: listed under its original
            row = shown(row)
            if name is not None and row["name"] != name:
                continue
            if contract is not None and not str(row["contract_digest"] or "").startswith(contract):
                continue
            if status is not None and row["status"] != status:
                continue
            if tags and any(row["tags"].get(k) != v for k, v in tags.items()):
                continue
            values = extra(row)
            if values is None or not all(f.matches(values) for f in where):
                continue
            if columns is not None:
                row["columns"] = {c: values.get(c) for c in columns}
            mine = under.get(run_id, [])
            row["replays"] = len(mine)
            out.append(row)
            if replays and mine:
                for sub in reversed(list(checked_runs(store, mine, notes, every_run=False))):
                    sub = shown(sub)
                    if columns is not None:
                        sub_values = extra(sub) or {}
                        sub["columns"] = {c: sub_values.get(c) for c in columns}
                    sub["original"] = run_id
                    out.append(sub)
            originals += 1
            if originals >= limit:
                break
        return out

    def candidates(index: Index) -> list[dict[str, Any]] | None:
        if not where:
            return None
        parts = [f.sql() for f in where]
        sql = " AND ".join(p[0] for p in parts)
        args = tuple(a for p in parts for a in p[1])
        return index.query(f"SELECT r.* FROM runs r WHERE {sql} ORDER BY r.run_id DESC", args)

    with Index(store) as index:
        index.sync()
        notes: list[str] = []
        q = "SELECT * FROM runs ORDER BY run_id DESC"
        out = select(index.query(q), notes, candidates(index))
        # A run sealed between the sync and reading its record is not a disagreement: if the
        # log moved on meanwhile, catch up once and look again.
        if notes and index.sync():
            notes = []
            out = select(index.query(q), notes, candidates(index))
    if warnings is not None:
        warnings += notes
    return out
