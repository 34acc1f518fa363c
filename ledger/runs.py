"""Run ids, and finding runs by id, prefix or name."""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from typing import Any

from .errors import AmbiguousIdError, UnknownIdError
from .records.base import record_from_json
from .records.run import Run
from .store import Store

__all__ = ["load_run", "new_run_id", "resolve_run", "run_ref"]


def new_run_id(now: datetime | None = None) -> str:
    """``20261130T074012.123456Z-3f9a1c2b``: sorts by start time, unique by the random tail."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(4)


def run_ref(run_id: str) -> str:
    return f"runs/{run_id}"


def resolve_run(store: Store, text: str) -> str:
    """A run id from an id, a unique id prefix, or a run name (its latest run)."""
    ids = sorted(name.split("/", 1)[1] for name, _ in store.refs.iter("runs/"))
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
    by_name = [i for i in ids if _name_of(store, i) == text]
    if by_name:
        return by_name[-1]
    raise UnknownIdError(
        f"no run {text!r} in {store.root}",
        hint="`ledger ls` lists runs; give an id, a unique id prefix, or a run name",
    )


def _name_of(store: Store, run_id: str) -> str | None:
    oid = store.refs.get(run_ref(run_id))
    if oid is None:
        return None
    try:
        value = store.get_json(oid)
    except Exception:
        return None
    return value.get("name") if isinstance(value, dict) else None


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
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Runs newest first, each row rebuilt from its hashed record (``ledger.checked``); where
    the index disagrees, the record wins and a line is added to ``warnings``. A ``running`` run
    whose recorder process is gone on this host is reported as ``abandoned``."""
    import json
    import socket

    from .checked import checked_runs
    from .index import Index

    if contract is not None and not contract.startswith("b3:"):
        contract = "b3:" + contract
    host = socket.gethostname()

    def select(rows: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for row in checked_runs(store, rows, notes):
            row["tags"] = json.loads(row["tags"] or "{}")
            mine = row["host"] == host
            if row["status"] == "running" and mine and not is_alive(int(row["pid"])):
                row["status"] = "abandoned"
            if name is not None and row["name"] != name:
                continue
            if contract is not None and not str(row["contract_digest"] or "").startswith(contract):
                continue
            if status is not None and row["status"] != status:
                continue
            if tags and any(row["tags"].get(k) != v for k, v in tags.items()):
                continue
            out.append(row)
            if len(out) >= limit:
                break
        return out

    with Index(store) as index:
        index.sync()
        notes: list[str] = []
        out = select(index.query("SELECT * FROM runs ORDER BY run_id DESC"), notes)
        # A run sealed between the sync and reading its record is not a disagreement: if the
        # log moved on meanwhile, catch up once and look again.
        if notes and index.sync():
            notes = []
            out = select(index.query("SELECT * FROM runs ORDER BY run_id DESC"), notes)
    if warnings is not None:
        warnings += notes
    return out
