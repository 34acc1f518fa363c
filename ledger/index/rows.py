"""How run, verdict, check and gate records appear in the SQLite index (``runs``, ``verdicts``,
``verdict_runs``, ``checks``): what ``ls`` and ``show`` look up instead of reading every record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._indexers import Indexer, JsonReader, Row, register_indexer
from ._sqlite import Database
from .short_ids import tail_of

__all__ = [
    "CHECKS_INDEXER",
    "GATES_INDEXER",
    "RUNS_INDEXER",
    "RUN_COLUMNS",
    "TAILS_INDEXER",
    "VERDICTS_INDEXER",
    "VERDICT_RUNS_INDEXER",
    "run_row",
]


def _tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS runs (ref TEXT PRIMARY KEY, run_id TEXT, oid TEXT, "
        "name TEXT, status TEXT, exit_code INTEGER, started TEXT, ended TEXT, "
        "wall_seconds REAL, contract_digest TEXT, tags TEXT, replay_of TEXT, host TEXT, "
        "pid INTEGER)"
    )
    # Name lookups (``resolve_run``) and the replays ``ls`` lists under their originals.
    db.execute("CREATE INDEX IF NOT EXISTS runs_name ON runs(name)")
    db.execute("CREATE INDEX IF NOT EXISTS runs_replay_of ON runs(replay_of)")


RUN_COLUMNS = (
    "ref",
    "run_id",
    "oid",
    "name",
    "status",
    "exit_code",
    "started",
    "ended",
    "wall_seconds",
    "contract_digest",
    "tags",
    "replay_of",
    "host",
    "pid",
)


# ``json.dumps(tags, sort_keys=True)`` builds an encoder per call; this one is built once.
_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode


def _run_cells(ref: str, oid: str, rec: dict[str, Any]) -> tuple[Any, ...]:
    """The ``runs`` row of a run record, in ``RUN_COLUMNS`` order."""
    get = rec.get
    return (
        ref,
        get("run_id"),
        oid,
        get("name"),
        get("status"),
        get("exit_code"),
        get("started"),
        get("ended"),
        get("wall_seconds"),
        get("contract_digest"),
        _SORTED_JSON(get("tags") or {}),
        get("replay_of"),
        get("host"),
        get("pid"),
    )


def run_row(ref: str, oid: str, rec: dict[str, Any]) -> dict[str, Any]:
    """The ``runs`` row a run record gives: also what ``ls`` checks index rows against."""
    return dict(zip(RUN_COLUMNS, _run_cells(ref, oid, rec), strict=True))


def _rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if ref.startswith("runs/"):
        yield "runs", _run_cells(ref, oid, rec)


def _remove(db: Database, ref: str) -> None:
    if ref.startswith("runs/"):
        db.execute("DELETE FROM runs WHERE ref=?", (ref,))


RUNS_INDEXER = Indexer(kind="run", tables=_tables, rows=_rows, remove=_remove)
register_indexer(RUNS_INDEXER)


def _verdict_tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS verdicts (ref TEXT PRIMARY KEY, oid TEXT, original TEXT, "
        "replay TEXT, replays TEXT, mode TEXT, outcome TEXT, summary TEXT, created TEXT)"
    )


def _verdict_rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if not ref.startswith("verdicts/"):
        return
    got = rec.get("replays")
    replays = got if isinstance(got, list) else []  # a hand-written record may hold anything
    yield (
        "verdicts",
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


def _verdict_remove(db: Database, ref: str) -> None:
    if ref.startswith("verdicts/"):
        db.execute("DELETE FROM verdicts WHERE ref=?", (ref,))


VERDICTS_INDEXER = Indexer(
    kind="verdict", tables=_verdict_tables, rows=_verdict_rows, remove=_verdict_remove
)
register_indexer(VERDICTS_INDEXER)


def _tail_tables(db: Database) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS run_tails (ref TEXT PRIMARY KEY, tail TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS run_tails_tail ON run_tails(tail)")


def _tail_rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if ref.startswith("runs/"):
        yield "run_tails", (ref, tail_of(ref.split("/", 1)[1]))


def _tail_remove(db: Database, ref: str) -> None:
    if ref.startswith("runs/"):
        db.execute("DELETE FROM run_tails WHERE ref=?", (ref,))


# Short ids of a page of runs without reading every run id (``short_ids_of(..., only=...)``).
TAILS_INDEXER = Indexer(
    kind="run", name="run_tails", tables=_tail_tables, rows=_tail_rows, remove=_tail_remove
)
register_indexer(TAILS_INDEXER)


def _verdict_runs_tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS verdict_runs (ref TEXT NOT NULL, run_id TEXT NOT NULL, "
        "PRIMARY KEY (ref, run_id))"
    )
    db.execute("CREATE INDEX IF NOT EXISTS verdict_runs_run_id ON verdict_runs(run_id)")


def _verdict_runs_rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if not ref.startswith("verdicts/"):
        return
    replays = rec.get("replays")
    runs = [rec.get("original"), *(replays if isinstance(replays, list) else [])]
    for run_id in dict.fromkeys(r for r in runs if isinstance(r, str)):
        yield "verdict_runs", (ref, run_id)


def _verdict_runs_remove(db: Database, ref: str) -> None:
    if ref.startswith("verdicts/"):
        db.execute("DELETE FROM verdict_runs WHERE ref=?", (ref,))


# Every run a verdict is about, its original and its replays: ``show`` finds a run's verdicts
# by run id instead of scanning each verdict's list of replays.
VERDICT_RUNS_INDEXER = Indexer(
    kind="verdict",
    name="verdict_runs",
    tables=_verdict_runs_tables,
    rows=_verdict_runs_rows,
    remove=_verdict_runs_remove,
)
register_indexer(VERDICT_RUNS_INDEXER)


def _checks_tables(db: Database) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS checks (ref TEXT PRIMARY KEY, run_id TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS checks_run_id ON checks(run_id)")


def _checks_rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if ref.startswith(("checks/", "gates/")):
        run_id = rec.get("run_id")
        yield "checks", (ref, run_id if isinstance(run_id, str) else None)


def _checks_remove(db: Database, ref: str) -> None:
    if ref.startswith(("checks/", "gates/")):
        db.execute("DELETE FROM checks WHERE ref=?", (ref,))


# The run each check and gate record judged: ``show`` reads only that run's records.
CHECKS_INDEXER = Indexer(
    kind="check", name="checks", tables=_checks_tables, rows=_checks_rows, remove=_checks_remove
)
GATES_INDEXER = Indexer(
    kind="gate", name="gates", tables=_checks_tables, rows=_checks_rows, remove=_checks_remove
)
register_indexer(CHECKS_INDEXER)
register_indexer(GATES_INDEXER)
