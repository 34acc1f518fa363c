"""The SQLite connection the index works through: ``sqlite3`` with the two helpers it needs.

The index only runs SQL; sqlite_utils' ``Database`` gave it nothing more, and importing it cost
every ``ledger record``, ``ls`` and ``show`` about 0.1 s (click, pluggy and dateutil come with
its plugin system; pandas and numpy too when installed). bench/bench_record.py measures it.
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
