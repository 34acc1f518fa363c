"""What an indexer is, and the registry of them: the record kinds' rows in the index.

Below ``db`` (which folds the log through them) and ``bulk`` (which folds a whole log in
batches), so that neither imports the other back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .._canonical import canonical_json
from ._sqlite import Database

__all__ = [
    "BIND_ERRORS",
    "Indexer",
    "JsonReader",
    "Row",
    "bindable",
    "indexers",
    "insert_rows",
    "record_rows",
    "register_indexer",
]

# (table, values): one row an indexer gives, inserted with INSERT OR REPLACE in that order.
Row = tuple[str, tuple[Any, ...]]


class JsonReader(Protocol):
    """What indexers read linked objects through: the store, or (``bulk``) the store with
    the objects many records link read once."""

    def get_json(self, oid: str) -> Any: ...


@dataclass(frozen=True)
class Indexer:
    """How a record kind shows up in the index. ``rows(store, ref, oid, record)`` gives the
    rows a record adds, as data: ``sync`` inserts them a record at a time, ``rebuild`` gathers
    them into batches. ``add``/``add_linked`` (rows the indexer inserts itself) are still
    taken, a statement at a time in both."""

    kind: str
    tables: Callable[[Database], None]  # create tables if missing
    remove: Callable[[Database, str], None]  # db, ref
    rows: Callable[[JsonReader, str, str, dict[str, Any]], Iterable[Row]] | None = None
    add: Callable[[Database, str, str, dict[str, Any]], None] | None = None  # db, ref, oid, rec
    name: str = ""  # several indexers may serve one kind; each registers under its own name
    # Instead of ``add``, for rows that also read the objects a record links (store first).
    add_linked: Callable[[Any, Database, str, str, dict[str, Any]], None] | None = None


_INDEXERS: dict[str, Indexer] = {}


def register_indexer(indexer: Indexer) -> None:
    _INDEXERS[indexer.name or indexer.kind] = indexer


def indexers() -> list[Indexer]:
    """The registered indexers, in the order they are applied."""
    return list(_INDEXERS.values())


def bindable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` as SQLite takes them, whatever a record held where a field should be plain: a
    list or object (a record from a package or remote that was never written by ledger) as its
    JSON text, an integer past 64 bits as its digits. The rows ledger writes bind as they are;
    this runs only after sqlite3 refused a row, so the index is never left unbuilt (and every
    command after it failing) by one record's odd field."""
    out: list[Any] = []
    for v in values:
        if v is None or isinstance(v, str | float | bytes):
            out.append(v)
        elif isinstance(v, int):  # bool included
            out.append(v if -(1 << 63) <= v < (1 << 63) else str(v))
        else:
            try:
                out.append(canonical_json(v).decode())
            except (TypeError, ValueError):
                out.append(str(v))
    return tuple(out)


# What sqlite3 raises for a value it cannot bind (a list: ProgrammingError; an int past 64
# bits: OverflowError).
BIND_ERRORS = (sqlite3.ProgrammingError, sqlite3.InterfaceError, OverflowError)


# What a row builder raises on a record whose fields lack their kind's shapes (one written by
# hand with the store's API: a number where a list goes). Such a record gets no rows from that
# indexer rather than stopping the index, and every command after it; ``ledger verify`` names
# it (``malformed-record``). The builders check the shapes they rely on; this is the backstop.
SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError)


def record_rows(ix: Indexer, reader: Any, ref: str, oid: str, value: dict[str, Any]) -> list[Row]:
    """``ix.rows``'s rows for one record, all or none (``SHAPE_ERRORS``); the same rows in a
    rebuild (``bulk``) and a sync (``db``), so the index they give is the same."""
    if ix.rows is None:
        return []
    try:
        return list(ix.rows(reader, ref, oid, value))
    except SHAPE_ERRORS:
        return []


def insert_rows(db: Database, rows: Iterable[Row]) -> None:
    """Insert an indexer's rows, a statement each (``sync``: one record at a time)."""
    for table, values in rows:
        marks = ",".join("?" * len(values))
        sql = f'INSERT OR REPLACE INTO "{table}" VALUES ({marks})'
        try:
            db.execute(sql, values)
        except BIND_ERRORS:
            db.execute(sql, bindable(values))
