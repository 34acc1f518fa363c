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
    """A run id from an id, a unique id prefix, or a run name (its newest original run)."""
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
    by_name = [(i, record) for i in ids if (record := _record_of(store, i)).get("name") == text]
    # A replay carries its original's name but never takes it over: the name is the newest
    # original's; only when no original holds it any more does the newest replay answer.
    originals = [i for i, record in by_name if record.get("replay_of") is None]
    if originals or by_name:
        return (originals or [i for i, _ in by_name])[-1]
    raise UnknownIdError(
        f"no run {text!r} in {store.root}",
        hint="`ledger ls` lists runs; give an id, a unique id prefix, or a run name",
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
) -> list[dict[str, Any]]:
    """Original runs from the index (caught up with the log first), newest first, each with
    ``replays``, how many replays it has (replays of replays included). The filters and
    ``limit`` select originals; with ``replays=True`` each is followed by its replays, oldest
    first, each with ``original`` set. A ``running`` run whose recorder process is gone on this
    host is reported as ``abandoned``."""
    import json
    import socket

    from .index import Index
    from .lineage import original_ids

    with Index(store) as index:
        index.sync()
        rows = index.query("SELECT * FROM runs ORDER BY run_id DESC", ())
    host = socket.gethostname()
    for row in rows:
        row["tags"] = json.loads(row["tags"] or "{}")
        if row["status"] == "running" and row["host"] == host and not is_alive(int(row["pid"])):
            row["status"] = "abandoned"
    roots = original_ids({r["run_id"]: r["replay_of"] for r in rows})
    under: dict[str, list[dict[str, Any]]] = {}
    for row in reversed(rows):  # oldest first under each original
        if row["replay_of"] is not None and roots[row["run_id"]] != row["run_id"]:
            row["original"] = roots[row["run_id"]]
            under.setdefault(row["original"], []).append(row)
    digest = None
    if contract is not None:
        digest = contract if contract.startswith("b3:") else "b3:" + contract
    out: list[dict[str, Any]] = []
    shown = 0
    for row in rows:
        if "original" in row:
            continue
        if name is not None and row["name"] != name:
            continue
        if digest is not None and not (row["contract_digest"] or "").startswith(digest):
            continue
        if status is not None and row["status"] != status:
            continue
        if tags and any(row["tags"].get(k) != v for k, v in tags.items()):
            continue
        row["replays"] = len(under.get(row["run_id"], []))
        out.append(row)
        if replays:
            out += under.get(row["run_id"], [])
        shown += 1
        if shown >= limit:
            break
    return out
