"""A whole log folded into emptied tables in batches: what ``ledger reindex`` does.

``Index.sync`` applies a line at a time: a statement for each row, and a run that was started,
then sealed, is indexed twice. Here the refs are folded in memory first (``judge``, as
``Index._apply`` does line by line); each ref's rows come from the record it holds at the end,
the ``records`` table gets every record an accepted move named, and the rows go in a table at
a time through one prepared statement (``executemany``). Objects that many records link (a
sweep's configs, a contract) are parsed once. Triggers and secondary indexes are dropped while
the rows go in, and each full-text index is built once from its table afterwards; the caller
defines them again. The result is the index ``sync`` builds (tests/index/test_reindex_bulk.py).

The rows are the values ``sync`` inserts a statement at a time (``insert_rows``), so sqlite3
takes them as they are. sqlite-utils' ``insert_all`` did this before: half as fast at 10^5 runs
(its conversion of each value, docs/benchmarks.md), and importing it cost every ``ledger
reindex`` and ``ledger verify`` 0.3 s more (pandas and numpy, when installed, come with it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import LedgerError
from ..store.fold import ABSENT, RefState, judge
from ..store.log import LogEntry
from ..store.repo import Store
from ._indexers import Row, indexers
from ._sqlite import Database

__all__ = ["fold_all"]

_BATCH = 20_000  # rows of one table held before they go in
_CACHED = 512  # linked objects kept parsed


class _Linked:
    """``store.get_json`` for the objects records link, the last ``_CACHED`` kept parsed: an
    object id names its content, so a copy read once is the object."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.objects = store.objects
        self._parsed: OrderedDict[str, Any] = OrderedDict()

    def get_json(self, oid: str) -> Any:
        if oid in self._parsed:
            self._parsed.move_to_end(oid)
            return self._parsed[oid]
        value = self.store.get_json(oid)
        self._parsed[oid] = value
        if len(self._parsed) > _CACHED:
            self._parsed.popitem(last=False)
        return value


class _Batches:
    """Rows per table, inserted (INSERT OR REPLACE, in order) ``_BATCH`` at a time."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.rows: dict[str, list[tuple[Any, ...]]] = {}

    def add(self, table: str, values: tuple[Any, ...]) -> None:
        rows = self.rows.setdefault(table, [])
        rows.append(values)
        if len(rows) >= _BATCH:
            self.flush(table)

    def flush(self, table: str) -> None:
        rows = self.rows.pop(table, [])
        if not rows:
            return
        # Every row holds a value for each column, as ``insert_rows`` writes them.
        marks = ",".join("?" * len(rows[0]))
        self.db.conn.executemany(f'INSERT OR REPLACE INTO "{table}" VALUES ({marks})', rows)

    def flush_all(self) -> None:
        for table in list(self.rows):
            self.flush(table)


def fold_all(
    db: Database,
    store: Store,
    lines: Iterator[tuple[int, LogEntry]],
    write_head: Callable[[int | None, tuple[int, LogEntry] | None], None],
) -> int:
    """Fold ``lines`` (the whole log) into the emptied tables; returns how many lines were
    read. ``write_head(last seq applied, (offset, entry) of the last line)``."""
    batches = _Batches(db)
    # Triggers and secondary indexes are made again by the caller once the rows are in:
    # building an index from sorted rows once costs less than keeping it up row by row.
    for (trigger,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger'"
    ).fetchall():
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    for (index,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    ).fetchall():
        db.execute(f'DROP INDEX IF EXISTS "{index}"')
    held: dict[str, RefState] = {}
    moved: dict[str, None] = {}  # every object an accepted move named, in order
    n, applied, head = 0, None, None
    for at, entry in lines:
        d = entry.data
        ref, new = d.get("ref"), d.get("new")
        batches.add(
            "log", (entry.seq, entry.hash, d.get("op"), ref, d.get("old"), new, d.get("time"))
        )
        applied, head, n = entry.seq, (at, entry), n + 1
        if not isinstance(ref, str) or d.get("unparseable"):
            continue
        problem, after = judge(held.get(ref), d)
        if problem is not None:
            continue  # refused: ``ledger verify`` reports it
        if after == ABSENT:
            held.pop(ref, None)
        else:
            held[ref] = RefState(str(new), str(after))  # judge took ``new`` for an object id
            moved[str(new)] = None
    holders: dict[str, list[str]] = {}
    for ref, state in held.items():
        batches.add("refs", (ref, state.oid, state.state))
        holders.setdefault(state.oid, []).append(ref)
    linked = _Linked(store)
    for oid in moved:
        try:
            value = store.get_json(oid)
        except LedgerError:
            continue  # a ref to a collected, missing or corrupt object: verify reports it
        if not isinstance(value, dict) or "kind" not in value:
            continue
        kind = str(value["kind"])
        batches.add("records", (oid, kind, value.get("schema", 1)))
        for ref in holders.get(oid, []):
            _index(db, batches, linked, kind, ref, oid, value)
    batches.flush_all()
    for (fts,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING FTS5%'"
    ).fetchall():
        db.execute(f'INSERT INTO "{fts}"("{fts}") VALUES (\'rebuild\')')
    write_head(applied, head)
    return n


def _index(
    db: Database,
    batches: _Batches,
    linked: _Linked,
    kind: str,
    ref: str,
    oid: str,
    value: dict[str, Any],
) -> None:
    for ix in indexers():
        if ix.kind != kind:
            continue
        if ix.rows is not None:
            row: Row
            for row in ix.rows(linked, ref, oid, value):
                batches.add(*row)
        if ix.add_linked is not None or ix.add is not None:
            batches.flush_all()  # its own statements come after the rows before them
            if ix.add_linked is not None:
                ix.add_linked(linked.store, db, ref, oid, value)
            elif ix.add is not None:
                ix.add(db, ref, oid, value)
