"""A whole log folded into emptied tables in batches: what ``ledger reindex`` does.

``Index.sync`` applies a line at a time: a statement for each row, and a run that was started,
then sealed, is indexed twice. Here the refs are folded in memory first (``Fold``, whose
``judge`` ``Index._apply`` applies line by line; ``ledger reindex`` repairs the ref files
from the same fold); each ref's rows come from the record it holds at the end,
the ``records`` table gets every record an accepted move named, and each table's rows go in
through one prepared ``INSERT OR REPLACE`` run over a batch (``executemany``), its values bound
as ``sync`` binds them (``insert_rows``): the same rows by construction, with no per-value
conversion in Python. Objects that many records link (a sweep's configs, a contract) are parsed
once. Triggers and secondary indexes are dropped while the rows go in, and each full-text index
is built once from its table afterwards; the caller defines them again. The result is the index
``sync`` builds (tests/index/test_reindex_bulk.py).
"""

from __future__ import annotations

import gc
import sqlite3
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import LedgerError
from ..store.fold import Fold
from ..store.log import LogEntry
from ..store.repo import Store
from ._indexers import BIND_ERRORS, Indexer, bindable, indexers, record_rows
from ._sqlite import Database

__all__ = ["fold_all"]

_BATCH = 20_000  # log lines, or records, whose rows are held before they go in
_CACHED = 512  # linked objects kept parsed


class _Linked:
    """``store.get_json`` for the objects records link, the last ``_CACHED`` kept parsed: an
    object id names its content, so a copy read once is the object."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._parsed: OrderedDict[str, Any] = OrderedDict()

    def get_json(self, oid: str) -> Any:
        parsed = self._parsed
        if oid in parsed:
            parsed.move_to_end(oid)
            return parsed[oid]
        value = self.store.get_json(oid)
        parsed[oid] = value
        if len(parsed) > _CACHED:
            parsed.popitem(last=False)
        return value


class _Batches:
    """Rows per table (``rows[table]``), inserted in order: one prepared statement a table,
    ``INSERT OR REPLACE INTO t VALUES (?, ...)`` as ``insert_rows`` writes it, run over the
    rows held (``executemany``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.rows: defaultdict[str, list[tuple[Any, ...]]] = defaultdict(list)

    def flush(self, table: str) -> None:
        rows = self.rows.pop(table, None)
        if rows:
            marks = ",".join("?" * len(rows[0]))
            sql = f'INSERT OR REPLACE INTO "{table}" VALUES ({marks})'
            try:
                self.conn.executemany(sql, rows)
            except BIND_ERRORS:  # a record's odd field (``bindable``): the batch again, bound
                self.conn.executemany(sql, [bindable(r) for r in rows])

    def flush_all(self) -> None:
        for table in list(self.rows):
            self.flush(table)


def fold_all(
    db: Database,
    store: Store,
    lines: Iterable[tuple[int, LogEntry]],
    write_head: Callable[[int | None, tuple[int, LogEntry] | None], None],
    fold: Fold,
) -> int:
    """Fold ``lines`` (the whole log) into the emptied tables; returns how many lines were
    read. ``write_head(last seq applied, (offset, entry) of the last line)``. ``fold`` (empty)
    is left with the refs of those lines: ``ledger reindex`` repairs the ref files from it."""
    # The fold makes millions of objects (parsed lines and records, rows) and keeps a batch
    # of them at a time, none in a cycle: the cyclic collector would walk the growing heap
    # again and again for nothing (5% of the CPU time at 100,000 runs).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _fold_all(db, store, lines, write_head, fold)
    finally:
        if collecting:
            gc.enable()


def _fold_all(
    db: Database,
    store: Store,
    lines: Iterable[tuple[int, LogEntry]],
    write_head: Callable[[int | None, tuple[int, LogEntry] | None], None],
    fold: Fold,
) -> int:
    conn = db.conn
    batches = _Batches(conn)
    # Triggers and secondary indexes are made again by the caller once the rows are in:
    # building an index from sorted rows once costs less than keeping it up row by row.
    for kind, name in conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'index') "
        "AND sql IS NOT NULL"
    ).fetchall():
        conn.execute(f'DROP {"TRIGGER" if kind == "trigger" else "INDEX"} IF EXISTS "{name}"')
    moved: dict[str, None] = {}  # every object an accepted move named, in order
    n, applied, head = 0, None, None
    pending, apply = batches.rows, fold.apply
    log = pending["log"]
    for at, entry in lines:
        d = entry.data
        get = d.get
        ref, new = get("ref"), get("new")
        log.append((entry.seq, entry.hash, get("op"), ref, get("old"), new, get("time")))
        if len(log) >= _BATCH:
            batches.flush("log")
            log = pending["log"]
        applied, head, n = entry.seq, (at, entry), n + 1
        # The fold refuses what the format does not allow (``ledger verify`` reports it) and
        # passes over a damaged line; a move it takes to an object names a record.
        if apply(d) is None and isinstance(new, str) and not get("unparseable"):
            moved[new] = None
    batches.flush("log")
    holders: dict[str, list[str]] = {}
    refs = pending["refs"]
    for ref, state in fold.refs.items():
        refs.append((ref, state.oid, state.state))
        holders.setdefault(state.oid, []).append(ref)
    batches.flush("refs")
    by_kind: dict[str, list[Indexer]] = {}
    for ix in indexers():
        by_kind.setdefault(ix.kind, []).append(ix)
    linked = _Linked(store)
    get_json = store.get_json
    for oid in moved:
        try:
            value = get_json(oid)
        except LedgerError:
            continue  # a ref to a collected, missing or corrupt object: verify reports it
        if not isinstance(value, dict) or "kind" not in value:
            continue
        kind = str(value["kind"])
        records = pending["records"]
        records.append((oid, kind, value.get("schema", 1)))
        for ref in holders.get(oid, ()):
            for ix in by_kind.get(kind, ()):
                if ix.rows is not None:
                    for table, values in record_rows(ix, linked, ref, oid, value):
                        pending[table].append(values)
                if ix.add_linked is not None or ix.add is not None:
                    batches.flush_all()  # its own statements come after the rows before them
                    if ix.add_linked is not None:
                        ix.add_linked(store, db, ref, oid, value)
                    elif ix.add is not None:
                        ix.add(db, ref, oid, value)
        if len(records) >= _BATCH:
            batches.flush_all()
    batches.flush_all()
    for (fts,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' "
        "AND sql LIKE '%USING fts5%'"
    ).fetchall():
        conn.execute(f'INSERT INTO "{fts}"("{fts}") VALUES (\'rebuild\')')
    write_head(applied, head)
    return n
