"""How run and verdict records appear in the SQLite index (``runs``, ``verdicts``)."""

from __future__ import annotations

import json
from typing import Any

from ._sqlite import sqlite_utils
from .index import Indexer, register_indexer

__all__ = ["RUNS_INDEXER", "VERDICTS_INDEXER"]


def _tables(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS runs (ref TEXT PRIMARY KEY, run_id TEXT, oid TEXT, "
        "name TEXT, status TEXT, exit_code INTEGER, started TEXT, ended TEXT, "
        "wall_seconds REAL, contract_digest TEXT, tags TEXT, replay_of TEXT, host TEXT, "
        "pid INTEGER)"
    )


def _add(db: sqlite_utils.Database, ref: str, oid: str, rec: dict[str, Any]) -> None:
    if not ref.startswith("runs/"):
        return
    db.execute(
        "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            ref,
            rec.get("run_id"),
            oid,
            rec.get("name"),
            rec.get("status"),
            rec.get("exit_code"),
            rec.get("started"),
            rec.get("ended"),
            rec.get("wall_seconds"),
            rec.get("contract_digest"),
            json.dumps(rec.get("tags") or {}, sort_keys=True),
            rec.get("replay_of"),
            rec.get("host"),
            rec.get("pid"),
        ),
    )


def _remove(db: sqlite_utils.Database, ref: str) -> None:
    if ref.startswith("runs/") and "runs" in db.table_names():
        db.execute("DELETE FROM runs WHERE ref=?", (ref,))


RUNS_INDEXER = Indexer(kind="run", tables=_tables, add=_add, remove=_remove)
register_indexer(RUNS_INDEXER)


def _verdict_tables(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS verdicts (ref TEXT PRIMARY KEY, oid TEXT, original TEXT, "
        "replay TEXT, replays TEXT, mode TEXT, outcome TEXT, summary TEXT, created TEXT)"
    )


def _verdict_add(db: sqlite_utils.Database, ref: str, oid: str, rec: dict[str, Any]) -> None:
    if not ref.startswith("verdicts/"):
        return
    replays = rec.get("replays") or []
    db.execute(
        "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?)",
        (
            ref,
            oid,
            rec.get("original"),
            replays[0] if replays else None,
            json.dumps(replays),
            rec.get("mode"),
            rec.get("outcome"),
            rec.get("summary"),
            rec.get("created"),
        ),
    )


def _verdict_remove(db: sqlite_utils.Database, ref: str) -> None:
    if ref.startswith("verdicts/") and "verdicts" in db.table_names():
        db.execute("DELETE FROM verdicts WHERE ref=?", (ref,))


VERDICTS_INDEXER = Indexer(
    kind="verdict", tables=_verdict_tables, add=_verdict_add, remove=_verdict_remove
)
register_indexer(VERDICTS_INDEXER)
