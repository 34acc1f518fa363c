"""The little of a SQLite database the index uses: statements on one connection, and the names
of its tables. (It was ``sqlite_utils.Database``, whose import, about 0.1 s with its plugin
machinery and click, was paid by every ``ledger ls`` and ``show``: bench/bench_scale.py.)"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["Database"]


class Database:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def table_names(self) -> list[str]:
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        return [str(r[0]) for r in rows]
