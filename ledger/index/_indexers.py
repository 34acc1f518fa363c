"""What an indexer is, and the registry of them: the record kinds' rows in the index.

Below ``db`` (which folds the log through them) and ``bulk`` (which folds a whole log in
batches), so that neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ._sqlite import Database

__all__ = ["Indexer", "JsonReader", "Row", "indexers", "insert_rows", "register_indexer"]

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


def insert_rows(db: Database, rows: Iterable[Row]) -> None:
    """Insert an indexer's rows, a statement each (``sync``: one record at a time)."""
    for table, values in rows:
        marks = ",".join("?" * len(values))
        db.execute(f'INSERT OR REPLACE INTO "{table}" VALUES ({marks})', values)
