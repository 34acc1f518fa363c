"""The SQLite connection the index works through: ``sqlite3`` with the helpers it needs.

Reading and keeping up with the log run SQL a statement at a time; sqlite_utils' ``Database``
gives that nothing more, and importing it costs every ``ledger record``, ``ls`` and ``show``
0.1-0.5 s (click, pluggy and dateutil come with its plugin system; pandas and numpy too when
installed). bench/bench_record.py measures it. No command loads it: ``ledger reindex``
(``bulk``) inserts its batches with ``executemany``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["Database"]


class Database:
    """A connection and the calls the index makes on it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters)

    def table_names(self) -> list[str]:
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return [str(r[0]) for r in rows.fetchall()]


# The tables an FTS5 table keeps its index in, after its own name (SQLite's fts5 docs).
_FTS5_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


def data_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables that hold rows of the index: not SQLite's own, and not a full-text index or
    the tables it keeps its words in (their bytes depend on the order rows went in; the rows
    are in the table it indexes)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = [str(n) for n, sql in rows if str(sql or "").upper().startswith("CREATE VIRTUAL")]
    shadows = {v + s for v in virtual for s in _FTS5_SHADOWS}
    return [str(n) for n, _ in rows if n not in virtual and n not in shadows]
