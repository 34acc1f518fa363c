"""The SQLite index: the only module that talks SQLite. A cache derived from the store.

The index is a fold over the hash-chained log: each ref change is applied in order, and the
``meta`` table remembers the last log line applied, its offset and its id. ``sync`` catches up
with lines written by other processes, reading only those after it (so a command costs the
same at 100,000 runs); ``rebuild`` empties the tables and folds the whole log again, which must
give exactly the same rows (tests/test_index.py, tests/test_index_incremental.py prove it).
A rebuild folds the refs in memory and inserts each ref's final rows in batches
(``ledger.index.bulk``, with sqlite-utils): the same rows, without a statement per row.

Record kinds add their own tables with ``register_indexer``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import LedgerAccessError, LedgerError
from ..store.fold import ABSENT, Fold, RefState, judge
from ..store.log import LogEntry
from ..store.repo import RefRepair, Store
from ._indexers import Indexer, Row, indexers, insert_rows, record_rows, register_indexer
from ._sqlite import Database, data_tables

__all__ = [
    "Index",
    "IndexDamagedError",
    "Indexer",
    "LogFold",
    "Reindexed",
    "Row",
    "indexers",
    "insert_rows",
    "rebuild_index",
    "register_indexer",
]

# Bumped when tables change: an index file written by another version is folded again.
# 5: refs.state (the fold's state of each ref, ledger.store.fold); 6: run_text and its
# full-text index (ledger.index.search); 7: curation, curated_tags (ledger.index.curation)
INDEX_VERSION = 7
_BUSY_MS = 60_000


# Modules that register indexers for their record kinds; imported when an Index opens.
INDEXER_MODULES = [
    "ledger.index.rows",
    "ledger.index.tables",
    "ledger.index.search",
    "ledger.index.curation",
]


# SQLite's primary result codes for "this file is not (or no longer) a database": a truncated
# or overwritten index.sqlite. Locking and I/O errors are other codes (``Index._retry``).
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
# The database a rebuild folds into before it is copied over the index (``_rebuild_aside``):
# nothing reads it meanwhile and a crash discards it, so no journal and no fsync; its pages
# are kept in memory up to 256 MiB before they go to its temporary file.
_ASIDE_PRAGMAS = ("journal_mode=OFF", "synchronous=OFF", "cache_size=-262144", "temp_store=MEMORY")
_INDEX_FILES = ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.sqlite-journal")


class IndexDamagedError(LedgerAccessError):
    """``index.sqlite`` cannot be read as a database; ``ledger reindex`` rebuilds it."""

    def __init__(self, path: object, why: object) -> None:
        super().__init__(
            f"the index {path} is damaged ({why})",
            hint="run `ledger reindex`: it rebuilds the index from the log and the objects, "
            "which this does not affect",
        )


def _is_damage(e: BaseException) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return (
        isinstance(e, sqlite3.DatabaseError)
        and code is not None
        and code & 0xFF
        in (
            _SQLITE_CORRUPT,
            _SQLITE_NOTADB,
        )
    )


def _not_regular(path: os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be the index file (a FIFO, a link, a folder), or None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return None if stat.S_ISREG(mode) else "not a regular file"


def _damage(store: Store) -> str | None:
    """What SQLite finds wrong with ``index.sqlite`` (``PRAGMA quick_check``), or None: reads
    every page once, which ``reindex`` can afford (it reads every record)."""
    path = store.root / "index.sqlite"
    why = _not_regular(path)
    if why is not None or not path.exists():
        return why
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return str(e) if _is_damage(e) else None  # locked, read-only media: the fold tells
    found = [str(r[0]) for r in rows if str(r[0]) != "ok"]
    return "; ".join(found[:3]) if found else None


@dataclass
class LogFold:
    """What a rebuild folded: the refs of the log's lines (``fold``) and the last of those
    lines, its byte offset and hash (``last``; None when the log had none)."""

    fold: Fold = field(default_factory=Fold)
    last: tuple[int, str] | None = None


@dataclass(frozen=True)
class Reindexed:
    """What ``rebuild_index`` did: log lines folded, what SQLite found wrong with the old
    file (deleted, then rebuilt), and the ref files repaired (none unless ``repair_refs``)."""

    applied: int
    damage: str | None
    refs: RefRepair = field(default_factory=RefRepair)


def rebuild_index(store: Store, *, repair_refs: bool = False) -> Reindexed:
    """``ledger reindex``: fold the whole log into the index again. An index file SQLite
    finds damaged is not repaired: it (and its WAL) is deleted and the index rebuilt from
    nothing, since it is derived from the log. ``repair_refs``: then make the ref files hold
    what the log says (``Store.repair_refs``) from the same fold, so the log is read once."""
    damage = _damage(store)
    if damage is not None:
        for name in _INDEX_FILES:
            path = store.root / name
            if path.is_dir() and not path.is_symlink():
                raise LedgerAccessError(
                    f"{path} is a folder, not the index", hint="move it away, then reindex"
                )
            path.unlink(missing_ok=True)
    folded = LogFold()
    with Index(store) as index:
        n = index.rebuild(folded)
    refs = store.repair_refs(folded.fold, folded.last) if repair_refs else RefRepair()
    return Reindexed(n, damage, refs)


class Index:
    def __init__(self, store: Store, *, conn: sqlite3.Connection | None = None) -> None:
        """The ledger's ``index.sqlite``, or ``conn`` (an in-memory copy ``ledger verify``
        compares with a fresh fold)."""
        import importlib

        for name in INDEXER_MODULES:
            importlib.import_module(name)
        self.store = store
        self.path = store.root / "index.sqlite"
        # The ledger's own file is rebuilt aside and copied in (``rebuild``); a connection a
        # caller gives is its own, and is folded in place.
        self._own_file = conn is None
        if conn is None:
            why = _not_regular(self.path)  # a FIFO would block the open, /dev/zero fill memory
            if why is not None:
                raise IndexDamagedError(self.path, why)
            conn = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None)
        self.db = Database(conn)
        try:
            self._retry(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
            self.db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            # The index is derived from the log, which is fsynced: a commit lost to a power
            # cut is folded again by the next sync, and WAL keeps the file whole. No fsync per
            # commit then (each ``ls`` that catches up with a new run waited on one).
            self.db.execute("PRAGMA synchronous=NORMAL")
            # A row replaced (INSERT OR REPLACE) fires its delete triggers, so the full-text
            # index (ledger.index.search) drops the words of the row it had.
            self.db.execute("PRAGMA recursive_triggers=ON")
            self._retry(self._create_tables)
            self._stale = self._retry(self._version) != str(INDEX_VERSION)
            if not self._stale:
                self._retry(self._set_version)
        except sqlite3.DatabaseError as e:
            conn.close()
            if _is_damage(e):
                raise IndexDamagedError(self.path, e) from None
            raise

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        """Closes; a damaged file met by any statement inside ``with`` (a page past the end
        of a truncated file is found only when read) says what to do, not a traceback."""
        self.close()
        if exc is not None and _is_damage(exc):
            raise IndexDamagedError(self.path, exc) from None

    # -- plumbing ------------------------------------------------------------------------------
    @staticmethod
    def _retry(fn: Callable[[], Any], attempts: int = 50) -> Any:
        """busy_timeout covers most contention; WAL checkpoints can still report 'locked'."""
        delay = 0.01
        for i in range(attempts):
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if ("locked" not in str(e) and "busy" not in str(e)) or i == attempts - 1:
                    raise LedgerError(
                        f"the SQLite index could not be updated: {e}",
                        hint="run `ledger reindex`; the objects are unaffected",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        raise AssertionError("unreachable")

    def _create_tables(self) -> None:
        db = self.db
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, oid TEXT NOT NULL, "
            "state TEXT NOT NULL)"
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS records (oid TEXT PRIMARY KEY, kind TEXT, schema INTEGER)"
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, hash TEXT, op TEXT, "
            "ref TEXT, old TEXT, new TEXT, time TEXT)"
        )
        for ix in indexers():
            ix.tables(db)

    def _version(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if row is None and self.last_seq() < 0:
            return str(INDEX_VERSION)  # empty: nothing folded under another layout
        return None if row is None else str(row[0])

    def _set_version(self) -> None:
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('version', ?)", (str(INDEX_VERSION),))

    # -- folding the log -------------------------------------------------------------------------
    def last_seq(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key='last_seq'").fetchone()
        return -1 if row is None else int(row[0])

    def _apply(self, entry: LogEntry) -> None:
        """Fold one log line: every line goes into ``log``; only a move the format allows
        (``ledger.store.fold.judge``) changes ``refs`` and the record tables (``bulk`` does
        the same for a whole log in batches)."""
        d = entry.data
        ref, new = d.get("ref"), d.get("new")
        self.db.execute(
            "INSERT OR REPLACE INTO log VALUES (?,?,?,?,?,?,?)",
            (entry.seq, entry.hash, d.get("op"), ref, d.get("old"), new, d.get("time")),
        )
        if not isinstance(ref, str) or d.get("unparseable"):
            return
        row = self.db.execute("SELECT oid, state FROM refs WHERE name=?", (ref,)).fetchone()
        problem, after = judge(None if row is None else RefState(row[0], row[1]), d)
        if problem is not None:
            return  # refused: ``ledger verify`` reports it; nothing shown takes it
        for ix in indexers():
            ix.remove(self.db, ref)
        if after == ABSENT:
            self.db.execute("DELETE FROM refs WHERE name=?", (ref,))
        else:
            self.db.execute("INSERT OR REPLACE INTO refs VALUES (?,?,?)", (ref, new, after))
            self._index_record(ref, str(new))

    def _index_record(self, ref: str, oid: str) -> None:
        try:
            value = self.store.get_json(oid)
        except LedgerError:
            return  # a ref to a collected, missing or corrupt object: verify reports it
        if not isinstance(value, dict) or "kind" not in value:
            return
        kind = str(value["kind"])
        self.db.execute(
            "INSERT OR REPLACE INTO records VALUES (?,?,?)", (oid, kind, value.get("schema", 1))
        )
        for ix in indexers():
            if ix.kind != kind:
                continue
            if ix.rows is not None:
                insert_rows(self.db, record_rows(ix, self.store, ref, oid, value))
            if ix.add_linked is not None:
                ix.add_linked(self.store, self.db, ref, oid, value)
            elif ix.add is not None:
                ix.add(self.db, ref, oid, value)

    def _log_from(self, at: int) -> Iterator[tuple[int, LogEntry]]:
        """(offset, entry) of the log's lines from byte offset ``at``."""
        return self.store.log.entries_from(at)

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _fold_tail(self) -> int:
        """Apply the lines after the last one folded. The index remembers where that line
        starts (``log_at``) and its hash (``log_head``): only the lines after it are read, once
        the line found there still hashes to ``log_head`` and the next line points at it; else
        ``_diverged``, when the log no longer continues what was folded (rewritten, truncated)."""
        at, head, last = self._meta("log_at"), self._meta("log_head"), self.last_seq()
        if at is None or head is None:
            # Folded by a version that did not remember where: read it all once, apply the
            # entries it had not seen.
            return self._fold(self._log_from(0), skip_to=last) or 0
        lines = self._log_from(int(at))
        first = next(lines, None)
        if first is not None and first[1].hash == head:
            n = self._fold(lines, head=first)
            if n is not None:
                return n
        return self._diverged(int(at), head)

    def _diverged(self, at: int, head: str) -> int:
        """The log does not continue the line folded last: fold it all again, and keep a note
        (meta ``log_rewritten``) that ``ledger verify`` reports until ``ledger reindex``: the
        edit must stay visible after the index has caught up with it."""
        note = self._meta("log_rewritten") or f"{head} at byte {at}"
        n = self._fold_all()
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('log_rewritten', ?)", (note,))
        return n

    def _fold(
        self,
        lines: Iterator[tuple[int, LogEntry]],
        *,
        head: tuple[int, LogEntry] | None = None,
        skip_to: int = -1,
    ) -> int | None:
        """Apply ``lines`` after ``head`` (the last line folded), then remember the last line
        read. Entries with a seq up to ``skip_to`` are not applied. None when the first line
        does not point at ``head`` (the chain was rewritten after it)."""
        n, applied = 0, None
        for at, entry in lines:
            if head is not None and n == 0 and entry.data.get("prev") != head[1].hash:
                return None
            if entry.seq > skip_to:
                self._apply(entry)
                applied = entry.seq
            head = (at, entry)
            n += 1
        self._write_head(applied, head)
        return n

    def _fold_all(self, into: LogFold | None = None) -> int:
        """Drop every table and fold the whole log into new ones (inside the caller's
        transaction); ``into`` gets the refs of the lines folded and the last of them."""
        # Views, triggers and tables are defined again, as this version of ledger writes them
        # (an index of another layout may lack a column, e.g. refs.state before version 5).
        for kind, name in self.db.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger')"
        ).fetchall():
            self.db.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
        # Virtual tables first: dropping one drops the tables it keeps its data in.
        for (name,) in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND sql LIKE 'CREATE VIRTUAL%'"
        ).fetchall():
            self.db.execute(f'DROP TABLE IF EXISTS "{name}"')
        for (name,) in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall():
            self.db.execute(f'DROP TABLE IF EXISTS "{name}"')
        self._create_tables()
        from .bulk import fold_all

        folded = LogFold() if into is None else into
        folded.fold = Fold()  # from nothing, should a transaction be tried again

        def write_head(applied: int | None, head: tuple[int, LogEntry] | None) -> None:
            folded.last = None if head is None else (head[0], head[1].hash)
            self._write_head(applied, head)

        n = fold_all(self.db, self.store, self._log_from(0), write_head, folded.fold)
        self._create_tables()  # the triggers the batches went without
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(INDEX_VERSION),))
        return n

    def _write_head(self, applied: int | None, head: tuple[int, LogEntry] | None) -> None:
        """Remember the last line applied and the last line read (where ``sync`` goes on)."""
        if applied is not None:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('last_seq', ?)", (str(applied),))
        if head is not None:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('log_at', ?)", (str(head[0]),))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('log_head', ?)", (head[1].hash,))

    def _transaction(self, fn: Callable[[], int]) -> int:
        def run() -> int:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                n = fn()
                self.db.execute("COMMIT")
                return n
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

        return int(self._retry(run))

    def sync(self) -> int:
        """Apply log entries this index has not seen. Returns how many lines were folded. Only
        the log's new lines are read (``_fold_tail``); an index written with another table
        layout (``INDEX_VERSION``), or one whose last folded line is not in the log any more,
        is folded again from the start."""
        if self._stale:
            from .._progress import stage

            # Folding every record again takes a while at 10^5 runs (about a minute): a
            # terminal shows why the first command after an upgrade waits.
            with stage("rebuilding the index (written by another version of ledger)"):
                n = self.rebuild()
            self._stale = False
            return n
        if self._current():
            return 0
        return self._transaction(self._fold_tail)

    def _current(self) -> bool:
        """Whether the log ends with the line folded last: then there is nothing to apply, and
        no write lock is taken (a reader does not wait for a writer, e.g. a long ``reindex``)."""
        at, head = self._meta("log_at"), self._meta("log_head")
        if at is None or head is None:
            return False
        lines = self._log_from(int(at))
        first = next(lines, None)
        return first is not None and first[1].hash == head and next(lines, None) is None

    def rebuild(self, into: LogFold | None = None) -> int:
        """Empty every table and fold the whole log again; ``into`` gets the refs of the
        lines folded. The ledger's own index is built aside and copied in
        (``_rebuild_aside``); a connection the caller gave is folded in place, in one
        transaction."""
        if self._own_file:
            return self._rebuild_aside(into)
        return self._transaction(lambda: self._fold_all(into))

    def _rebuild_aside(self, into: LogFold | None) -> int:
        """Fold the log into a new database of SQLite's own (an unnamed temporary file,
        deleted when closed, or by the kernel if this process dies), written without a
        journal or an fsync, then copy it over ``index.sqlite`` page by page in one
        transaction (SQLite's backup API). A crash before that commit leaves the old index
        whole; readers see the old index or the new one; writers wait only for the copy,
        not for the fold. Renaming a new file over the index is what this avoids: a
        connection still open on the old file keeps writing the ``-wal`` and ``-shm``
        files by name, which the new file would read as its own."""
        aside = sqlite3.connect("", isolation_level=None)
        try:
            # The copy keeps the page size of the source; a WAL database cannot change its own.
            page_size = int(self.db.execute("PRAGMA page_size").fetchone()[0])
            aside.execute(f"PRAGMA page_size={page_size}")
            built = _Aside(self, aside)
            for pragma in _ASIDE_PRAGMAS:
                aside.execute(f"PRAGMA {pragma}")
            # One transaction, never retried: no other connection can lock this database.
            aside.execute("BEGIN")
            n = built._fold_all(into)
            aside.execute("COMMIT")
            self._retry(lambda: aside.backup(self.db.conn))
            return n
        finally:
            aside.close()

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows, sorted: for comparing two indexes. A full-text index's own
        tables are left out: their bytes depend on the order words went in; the rows they
        index are in ``run_text``, and ``consistency`` checks the two agree."""
        out: dict[str, list[tuple[Any, ...]]] = {}
        for name in sorted(data_tables(self.db.conn)):
            rows = self.db.execute(f'SELECT * FROM "{name}"').fetchall()
            out[name] = sorted(rows, key=repr)
        return out

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cur = self.db.execute(sql, params)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


class _Aside(Index):
    """The database a rebuild of ``index`` folds into (``Index._rebuild_aside``), reading the
    log through ``index`` (a subclass may read it its own way)."""

    def __init__(self, index: Index, conn: sqlite3.Connection) -> None:
        super().__init__(index.store, conn=conn)
        self._index = index

    def _log_from(self, at: int) -> Iterator[tuple[int, LogEntry]]:
        return self._index._log_from(at)
