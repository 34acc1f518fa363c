"""Full-text search over runs: ``ledger ls --search TEXT`` and the web view's search box.

Each run has a ``run_text`` row: its name, its tags (``k=v``, by key), the command it ran
(the captured argv, from its resolved config, else its contract) and its notes; the FTS5 table
``run_text_fts`` indexes those columns (external content: the words point at ``run_text``'s
rows, which triggers keep it in step with). The tags column follows the ``tags`` table through
triggers, and the name follows ``runs.name``: whatever writes a run's tags or renames it
(a log entry folded later, say) changes what search finds without knowing about it.

A query is SQLite's FTS5 syntax: words (all must occur), ``"a phrase"``, ``pre*``, ``OR``,
``NOT``, ``name:word`` to look in one column. A word FTS5 would not take bare (``train.py``,
``lr=0.1``, ``cifar-10``) is looked for as the phrase it spells, so what a user copies from a
command or a tag works as typed. The query is checked before use: a malformed one (an
unclosed quote, an unknown column, a lone ``AND``) is a usage error, not a traceback. As for
``--where``, the index only picks the candidates: each run shown is matched again against the
text of its hashed record (``Search.matches``), so an edited index can hide a run but never
show one that does not match.
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from collections.abc import Iterator
from typing import Any

from ..errors import LedgerError, UsageError
from ._indexers import Indexer, JsonReader, Row, register_indexer
from ._sqlite import Database

__all__ = ["SEARCH_COLUMNS", "SEARCH_INDEXER", "Search", "curated_text", "fts_query", "run_text"]

SEARCH_COLUMNS = ("name", "tags", "command", "notes")
_COLS = ", ".join(SEARCH_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in SEARCH_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in SEARCH_COLUMNS)
# A run's tags as ``run_text.tags`` holds them: ``k=v`` by key, one space apart; NULL for none.
_TAGS_OF = (
    "(SELECT group_concat(key || '=' || value, ' ') FROM "
    "(SELECT key, value FROM tags WHERE run_id = {} ORDER BY key))"
)
_TRIGGERS = {
    "run_text_ai": f"AFTER INSERT ON run_text BEGIN INSERT INTO run_text_fts(rowid, {_COLS}) "
    f"VALUES (new.rowid, {_NEW}); END",
    "run_text_ad": f"AFTER DELETE ON run_text BEGIN INSERT INTO run_text_fts(run_text_fts, "
    f"rowid, {_COLS}) VALUES ('delete', old.rowid, {_OLD}); END",
    "run_text_au": f"AFTER UPDATE ON run_text BEGIN INSERT INTO run_text_fts(run_text_fts, "
    f"rowid, {_COLS}) VALUES ('delete', old.rowid, {_OLD}); INSERT INTO run_text_fts(rowid, "
    f"{_COLS}) VALUES (new.rowid, {_NEW}); END",
    "tags_text_ai": "AFTER INSERT ON tags BEGIN UPDATE run_text SET tags = "
    f"{_TAGS_OF.format('new.run_id')} WHERE run_id = new.run_id; END",
    "tags_text_ad": "AFTER DELETE ON tags BEGIN UPDATE run_text SET tags = "
    f"{_TAGS_OF.format('old.run_id')} WHERE run_id = old.run_id; END",
    "tags_text_au": "AFTER UPDATE ON tags BEGIN UPDATE run_text SET tags = "
    f"{_TAGS_OF.format('old.run_id')} WHERE run_id = old.run_id; UPDATE run_text SET tags = "
    f"{_TAGS_OF.format('new.run_id')} WHERE run_id = new.run_id; END",
    "runs_text_au": "AFTER UPDATE OF name ON runs BEGIN UPDATE run_text SET name = new.name "
    "WHERE run_id = new.run_id; END",
}
_HINT = (
    "words match runs whose name, tags, command or notes hold them all; "
    '"a phrase", pre*, OR, NOT, and name:, tags:, command:, notes: to look in one of them '
    "(SQLite FTS5 query syntax)"
)


# Pieces of a query: a quoted phrase (to its closing quote, or to the end when unclosed), or
# a run of anything else but spaces and parentheses.
_PIECE = re.compile(r'"(?:[^"]|"")*"?|[()]|[^\s()"]+')
_BARE = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*:)?[\w]+\*?|\*")


def fts_query(text: str) -> str:
    """``text`` with each word FTS5 would not take bare quoted as a phrase; ``name:train.py``
    keeps its column."""
    out = []
    for piece in _PIECE.findall(text):
        if piece.startswith('"') or piece in ("(", ")") or _BARE.fullmatch(piece):
            out.append(piece)
            continue
        column, colon, rest = piece.partition(":")
        if colon and rest and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column):
            out.append(f'{column}:"{rest}"')
        else:
            out.append(f'"{piece}"')
    return " ".join(out)


def _tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS run_text (run_id TEXT PRIMARY KEY, name TEXT, tags TEXT, "
        "command TEXT, notes TEXT)"
    )
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS run_text_fts USING fts5({_COLS}, "
        "content='run_text', content_rowid='rowid')"
    )
    for name, body in _TRIGGERS.items():
        db.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")


def _argv(store: JsonReader | None, oid: Any) -> list[str] | None:
    if store is None or not isinstance(oid, str):
        return None
    try:
        value = store.get_json(oid)
    except LedgerError:
        return None
    argv = value.get("argv") if isinstance(value, dict) else None
    return [str(a) for a in argv] if isinstance(argv, list) else None


def run_text(store: JsonReader | None, rec: dict[str, Any]) -> dict[str, str | None]:
    """What search reads of a run record: name, tags, command and notes, as text."""
    tags = rec.get("tags")
    pairs = sorted((str(k), str(v)) for k, v in tags.items()) if isinstance(tags, dict) else []
    argv = _argv(store, rec.get("resolved_config"))
    if argv is None:
        argv = _argv(store, rec.get("contract"))
    notes = rec.get("notes")
    name = rec.get("name")
    return {
        "name": name if isinstance(name, str) else None,
        "tags": " ".join(f"{k}={v}" for k, v in pairs) or None,
        "command": " ".join(argv) if argv else None,
        "notes": "\n".join(str(n) for n in notes) if isinstance(notes, list) and notes else None,
    }


def curated_text(text: dict[str, str | None], row: dict[str, Any]) -> dict[str, str | None]:
    """``text`` (a run record's, ``run_text``) with the curation ``ledger.run.find`` laid
    over ``row``: the curated name beside the recorded one (either finds the run), the tags as
    curated."""
    name = row.get("name")
    if isinstance(name, str) and name != text["name"]:
        text = {**text, "name": " ".join(n for n in (text["name"], name) if n)}
    tags = row.get("tags")
    if isinstance(tags, dict):
        pairs = sorted((str(k), str(v)) for k, v in tags.items())
        text = {**text, "tags": " ".join(f"{k}={v}" for k, v in pairs) or None}
    return text


def _rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    if ref.startswith("runs/"):
        text = run_text(store, rec)
        yield "run_text", (ref.split("/", 1)[1], *(text[c] for c in SEARCH_COLUMNS))


def _remove(db: Database, ref: str) -> None:
    if ref.startswith("runs/"):
        db.execute("DELETE FROM run_text WHERE run_id=?", (ref.split("/", 1)[1],))


SEARCH_INDEXER = Indexer(kind="run", name="run_text", tables=_tables, rows=_rows, remove=_remove)
register_indexer(SEARCH_INDEXER)


class Search:
    """A checked full-text query. ``sql()``: the condition on ``runs r`` the index answers;
    ``matches(text)``: the same query on one run's text (``run_text``), in memory."""

    def __init__(self, text: str) -> None:
        if not text.strip():
            raise UsageError("--search needs words to look for", hint=_HINT)
        self.text = fts_query(text)
        self._conn = sqlite3.connect(":memory:")
        weakref.finalize(self, self._conn.close)  # closed with the query, whoever drops it
        self._conn.execute(f"CREATE VIRTUAL TABLE q USING fts5({_COLS})")
        try:
            self._conn.execute("SELECT count(*) FROM q WHERE q MATCH ?", (self.text,)).fetchone()
        except sqlite3.Error as e:
            self._conn.close()
            raise UsageError(
                f"--search {text!r} is not a query SQLite can read ({e})", hint=_HINT
            ) from None

    def sql(self) -> tuple[str, tuple[Any, ...]]:
        return (
            "(r.run_id IN (SELECT run_id FROM run_text WHERE rowid IN "
            "(SELECT rowid FROM run_text_fts WHERE run_text_fts MATCH ?)) "
            # a curated run's name and tags are not in run_text: every curated run is a
            # candidate, matched in memory on its curated text (``curated_text``)
            "OR r.run_id IN (SELECT run_id FROM curation))",
            (self.text,),
        )

    def matches(self, text: dict[str, str | None]) -> bool:
        conn = self._conn
        conn.execute("DELETE FROM q")
        conn.execute(
            f"INSERT INTO q ({_COLS}) VALUES (?,?,?,?)", tuple(text[c] for c in SEARCH_COLUMNS)
        )
        row = conn.execute("SELECT count(*) FROM q WHERE q MATCH ?", (self.text,)).fetchone()
        return bool(row[0])

    def close(self) -> None:
        self._conn.close()
