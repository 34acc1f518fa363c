"""Run ids, and finding runs by id, prefix or name."""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from typing import Any

from .errors import AmbiguousIdError, UnknownIdError
from .records.base import record_from_json
from .records.run import Run
from .short_ids import match_short_id
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
) -> list[dict[str, Any]]:
    """Runs from the index (caught up with the log first), newest first. A ``running`` run
    whose recorder process is gone on this host is reported as ``abandoned``."""
    import json
    import socket

    from .index import Index

    sql = "SELECT * FROM runs WHERE 1=1"
    params: list[object] = []
    if name is not None:
        sql += " AND name = ?"
        params.append(name)
    if contract is not None:
        sql += " AND contract_digest LIKE ?"
        params.append(("b3:" + contract if not contract.startswith("b3:") else contract) + "%")
    sql += " ORDER BY run_id DESC"
    with Index(store) as index:
        index.sync()
        rows = index.query(sql, tuple(params))
    host = socket.gethostname()
    out: list[dict[str, Any]] = []
    for row in rows:
        row["tags"] = json.loads(row["tags"] or "{}")
        if row["status"] == "running" and row["host"] == host and not is_alive(int(row["pid"])):
            row["status"] = "abandoned"
        if status is not None and row["status"] != status:
            continue
        if tags and any(row["tags"].get(k) != v for k, v in tags.items()):
            continue
        out.append(row)
        if len(out) >= limit:
            break
    return out
