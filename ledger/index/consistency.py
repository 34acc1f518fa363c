"""Checks above the store layer: the log against the records it names, the index against the log.

``verify_store`` proves the objects hash right, the log is one unbroken chain and the ref files
match the fold of the log. That leaves everything a command *displays* from somewhere else:

* the log lines' own fields (``op``, ``old``, ``status``, ``time``, ``step``...), which nothing
  covers on the last line but the head; here each must agree with the record the line points
  at and with the fold of the lines before it;
* ref names, which say whose record it is (``runs/<run_id>``): the record must say the same;
* ``index.sqlite``, a cache: a copy of it, caught up with the log, must equal a fresh fold of
  the whole log row for row (its ``log`` table also remembers every line's hash, so a line
  edited after it was indexed shows up even where no record contradicts it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import LedgerError
from ..store.fold import check_transitions
from ..store.log import LogEntry
from ..store.repo import Store
from ..store.verify import Problem
from ._sqlite import data_tables

__all__ = ["check_consistency", "check_index", "check_log_records", "check_new_lines"]

# Keys every line has; any other key repeats a field of the record the line points at.
_LINE_KEYS = {"seq", "prev", "op", "ref", "old", "new", "time"}
# Keys that describe the change rather than the record (retention deletes).
_NOTE_KEYS = {"reason", "keep_last"}
# Keys of an ``import`` line: the ledger the ref came from and that ledger's chain head.
_ORIGIN_KEYS = {"origin", "origin_head"}

# What record kind each verb logs; verbs not listed (``set``) may point at anything.
_OP_KIND = {
    "start": "run",
    "seal": "run",
    "verdict": "verdict",
    "audit": "audit",
    "checkpoint": "checkpoint",
    "publish": "checkpoint",
    "check": "check",
    "gate": "gate",
    "source": "git-source",
    "tag": "curation",
    "rename": "curation",
    "retract": "curation",
}
# The note each verb must carry (it repeats a field of the record, checked below).
_OP_NOTES = {
    "seal": "status",
    "verdict": "outcome",
    "audit": "exit_code",
    "checkpoint": "step",
    "check": "passed",
    "gate": "passed",
}
_OP_STATUS: dict[str, Callable[[Any], bool]] = {
    "start": lambda s: s == "running",
    "seal": lambda s: s != "running",
    "import": lambda s: s != "running",  # only sealed runs travel
}


def _first_replay(rec: dict[str, Any]) -> Any:
    replays = rec.get("replays")
    return replays[0] if isinstance(replays, list) and replays else None


@dataclass(frozen=True)
class _Binding:
    """Refs matching ``pattern`` hold ``kind`` records, and each named group of the pattern
    must equal what ``fields`` reads from the record. Which ops may change them is the fold's
    table (``ledger.store.fold.KINDS``)."""

    pattern: re.Pattern[str]
    kind: str
    fields: dict[str, Callable[[dict[str, Any]], Any]]


_REF_BINDINGS = [
    _Binding(
        re.compile(r"^runs/(?P<run_id>[^/]+)$"),
        "run",
        {"run_id": lambda r: r.get("run_id")},
    ),
    _Binding(
        re.compile(r"^verdicts/(?P<original>[^/]+)/(?P<replay>[^/]+)$"),
        "verdict",
        {"original": lambda r: r.get("original"), "replay": _first_replay},
    ),
    _Binding(
        re.compile(r"^audits/(?P<audit_id>[^/]+)$"),
        "audit",
        {"audit_id": lambda r: r.get("audit_id")},
    ),
    _Binding(
        re.compile(r"^checkpoints/(?P<run_id>[^/]+)/step-(?P<step>\d+)$"),
        "checkpoint",
        {"run_id": lambda r: r.get("run_id"), "step": lambda r: str(r.get("step"))},
    ),
    _Binding(
        re.compile(r"^checks/(?P<check_id>[^/]+)$"),
        "check",
        {"check_id": lambda r: r.get("check_id")},
    ),
    _Binding(
        re.compile(r"^gates/(?P<gate_id>[^/]+)$"),
        "gate",
        {"gate_id": lambda r: r.get("gate_id")},
    ),
    _Binding(
        re.compile(r"^checkpoints/(?P<run_id>[^/]+)/latest$"),
        "checkpoint",
        {"run_id": lambda r: r.get("run_id")},
    ),
    _Binding(
        re.compile(r"^curation/(?P<run_id>[^/]+)$"),
        "curation",
        {"run_id": lambda r: r.get("run_id")},
    ),
    _Binding(
        re.compile(r"^sources/git/(?P<commit>[0-9a-f]{40}|[0-9a-f]{64})$"),
        "git-source",
        {"commit": lambda r: r.get("commit")},
    ),
]

# A log line is written after its record: its time cannot be earlier than the record's own.
_CLOCK_SLACK = timedelta(seconds=1)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _record(store: Store, oid: Any) -> dict[str, Any] | None:
    """The record a line points at; None when it is gone (collected) or not a record."""
    if not isinstance(oid, str) or not store.objects.has(oid):
        return None
    try:
        value = store.get_json(oid)
    except LedgerError:
        return None  # verify_store reports corrupt objects
    return value if isinstance(value, dict) else None


def _line_problems(
    store: Store, where: str, d: dict[str, Any], *, current: bool = True
) -> list[Problem]:
    """What a line says against the record it sets. Which moves are allowed (op per ref kind,
    ``old``, ``new``) is the fold's to judge (``ledger.store.fold``), reported by
    ``verify_store``. ``current``: the line's record is the one its ref holds now (the one every
    reader loads): only that one is checked against its kind's model."""
    out: list[Problem] = []

    def bad(message: str) -> None:
        out.append(Problem("log-record", where, message))

    op, ref, new = d.get("op"), d.get("ref"), d.get("new")
    if not isinstance(op, str) or not isinstance(ref, str):
        return out  # the fold refuses it (``verify_store``: ``transition``)
    when = _time(d.get("time"))
    if when is None:
        bad(f"time is {d.get('time')!r}, not an RFC 3339 time")
    note = _OP_NOTES.get(op)
    if note is not None and note not in d:
        bad(f"op {op!r} must say the record's {note}, and this line does not")
    binding = next((b for b in _REF_BINDINGS if b.pattern.match(ref)), None)
    rec = _record(store, new)
    if rec is None:
        if binding is not None and isinstance(new, str) and store.objects.has(new):
            bad(f"{ref} must hold a {binding.kind} record, but {new} is not a record")
        return out
    kind = rec.get("kind")
    from ..records.base import malformed_reason

    # pydantic, 0.1-0.4 ms a record: for the records refs hold now, not those they held before
    # (a run's ``running`` record), which no command loads.
    malformed = malformed_reason(rec) if current else None
    if malformed is not None:  # every reader of it would refuse it
        message = f"{where}: {ref} holds {kind} record {new}, which is malformed: {malformed}"
        out.append(Problem("malformed-record", where, message))
    want_kind = _OP_KIND.get(op)
    if want_kind is not None and kind != want_kind:
        bad(f"op {op!r} logs a {want_kind} record, but {new} is a {kind} record")
    status_ok = _OP_STATUS.get(op)
    if status_ok is not None and not status_ok(rec.get("status")):
        bad(f"op {op!r} cannot log a run whose record says status {rec.get('status')!r}")
    if op == "import":
        for key in sorted(_ORIGIN_KEYS - set(d)):
            bad(f"op 'import' must name the {key} it came from, and this line does not")
    # A curation link pulled or imported says where it came from, as an import line does.
    origin_keys = _ORIGIN_KEYS if op == "import" or _OP_KIND.get(op) == "curation" else set()
    for key in sorted(set(d) - _LINE_KEYS - _NOTE_KEYS - origin_keys):
        if rec.get(key) != d[key]:
            bad(f"the line says {key}={d[key]!r} but record {new} says {rec.get(key)!r}")
    m = None if binding is None else binding.pattern.match(ref)
    if binding is not None and m is not None:
        if kind != binding.kind:
            bad(f"{ref} must hold a {binding.kind} record, but {new} is a {kind} record")
        else:
            for group, get in binding.fields.items():
                if str(get(rec)) != m.group(group):
                    bad(
                        f"{ref} names {group} {m.group(group)!r}, but record {new} has {get(rec)!r}"
                    )
    if kind == "curation" and op in _OP_KIND and _OP_KIND[op] == "curation":
        out += [Problem("log-record", where, m) for m in _curation_problems(store, d, rec)]
    made = [t for t in (_time(rec.get(k)) for k in ("started", "ended", "created")) if t]
    if when is not None and made and when + _CLOCK_SLACK < max(made):
        bad(f"time {d.get('time')} is before record {new} was made ({max(made).isoformat()})")
    return out


def _curation_problems(store: Store, d: dict[str, Any], rec: dict[str, Any]) -> list[str]:
    """A curation record is one link of its run's chain: it names the act the line logs, the
    record it replaces (the line's ``old``), and keeps a retraction once made."""
    op, new, old = d.get("op"), d.get("new"), d.get("old")
    out = []
    if rec.get("op") != op:
        out.append(f"op {op!r} logs record {new}, which says it is a {rec.get('op')!r}")
    if rec.get("previous") != old:
        out.append(
            f"record {new} says it replaces {rec.get('previous') or 'nothing'}, but the line "
            f"moves the ref from {old or 'nothing'}"
        )
    if op == "retract" and rec.get("retracted") is not True:
        out.append(f"op 'retract' logs record {new}, which does not say the run is retracted")
    before = _record(store, old)
    if before is not None and before.get("retracted") is True and rec.get("retracted") is not True:
        out.append(f"record {new} drops the retraction that {old} made: it is never undone")
    return out


def check_log_records(store: Store) -> list[Problem]:
    """Check each line against the record it names (the moves themselves are checked by the
    fold, ``verify_store``)."""
    problems: list[Problem] = []
    last: dict[str, int] = {}  # ref -> its last line: two reads of the log, not all in memory
    for lineno, entry in enumerate(store.log.entries(), start=1):
        if isinstance(ref := entry.data.get("ref"), str):
            last[ref] = lineno
    for lineno, entry in enumerate(store.log.entries(), start=1):
        d = entry.data
        if d.get("unparseable"):
            continue  # verify_store reports it
        ref = d.get("ref")
        current = isinstance(ref, str) and last.get(ref) == lineno
        problems += _line_problems(store, f"log line {lineno}", d, current=current)
    return problems


def check_new_lines(store: Store, lines: list[dict[str, Any]]) -> list[Problem]:
    """Log lines about to be appended (an import's, before it writes them), checked as
    ``ledger verify`` checks them once written: each move against the fold of the log as it
    stands and the lines before it (``ledger.store.fold``), and each line against the record
    it names (``ledger.share.door``)."""
    problems = [
        Problem("transition", r.ref, r.message)
        for r in check_transitions(lines, start=store.fold())
    ]
    for d in lines:
        ref = d.get("ref")
        where = f"the new log line for {ref}" if isinstance(ref, str) else "a new log line"
        problems += _line_problems(store, where, d)
    return problems


def _table_rows(
    conn: sqlite3.Connection, table: str
) -> tuple[list[str], dict[Any, tuple[Any, ...]]]:
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    cols = [c[1] for c in info]
    pk = [i for i, c in enumerate(info) if c[5]]
    key_at = pk[0] if len(pk) == 1 else None
    rows: dict[Any, tuple[Any, ...]] = {}
    for row in conn.execute(f'SELECT * FROM "{table}"').fetchall():
        rows[row if key_at is None else row[key_at]] = tuple(row)
    return cols, rows


def _compare(
    fresh: sqlite3.Connection, kept: sqlite3.Connection, collected: Callable[[Any], bool]
) -> list[Problem]:
    """Row by row; ``collected(oid)``: a ``records`` row the fold cannot give because gc
    deleted its object since it was indexed, which is not a difference."""
    problems: list[Problem] = []

    def tables(conn: sqlite3.Connection) -> set[str]:
        return set(data_tables(conn))

    def schema(conn: sqlite3.Connection) -> dict[str, str]:
        # Views and triggers are read by `sqlite3`/`datasette` users: an edited one lies too.
        q = "SELECT type || ' ' || name, sql FROM sqlite_master WHERE type IN ('view','trigger')"
        return {r[0]: r[1] for r in conn.execute(q).fetchall()}

    want_schema, have_schema = schema(fresh), schema(kept)
    for name in sorted(set(want_schema) | set(have_schema)):
        if want_schema.get(name) != have_schema.get(name):
            problems.append(
                Problem(
                    "index-mismatch",
                    name,
                    f"the index's {name} is {have_schema.get(name) or 'missing'!r}; "
                    f"this version of ledger defines it as {want_schema.get(name) or 'nothing'!r}",
                )
            )
    want_tables, have_tables = tables(fresh), tables(kept)
    for table in sorted(want_tables - have_tables):
        problems.append(Problem("index-mismatch", table, f"the index has no {table} table"))
    for table in sorted(want_tables & have_tables):
        cols, want = _table_rows(fresh, table)
        _, have = _table_rows(kept, table)
        for key in sorted(set(want) | set(have), key=repr):
            w, h = want.get(key), have.get(key)
            if w == h or (table == "records" and w is None and collected(key)):
                continue
            subject = f"{table}[{key}]"
            if h is None:
                msg = f"the index lacks row {key!r} of table {table}, which the log gives"
            elif w is None:
                msg = f"the index has row {key!r} in table {table}, which the log does not give"
            else:
                diffs = [
                    f"{c} is {hv!r}, the log and records say {wv!r}"
                    for c, wv, hv in zip(cols, w, h, strict=False)
                    if wv != hv
                ]
                msg = f"index table {table}, row {key!r}: " + "; ".join(diffs)
            problems.append(Problem("index-mismatch", subject, msg))
    return problems + _fts_problems(kept)


def _fts_problems(conn: sqlite3.Connection) -> list[Problem]:
    """A full-text index whose words are not those of the rows it indexes (edited, or out of
    step): FTS5's integrity check, against the content table (``rank`` 1)."""
    problems = []
    for name in sorted(_fts_tables(conn)):
        try:
            conn.execute(f'INSERT INTO "{name}"("{name}", rank) VALUES (\'integrity-check\', 1)')
        except sqlite3.DatabaseError as e:
            problems.append(
                Problem(
                    "index-mismatch",
                    name,
                    f"the full-text index {name} does not hold the words of the rows it "
                    f"indexes ({e}): search would find the wrong runs",
                )
            )
    return problems


def _fts_tables(conn: sqlite3.Connection) -> list[str]:
    q = "SELECT name, sql FROM sqlite_master WHERE type='table' AND sql LIKE 'CREATE VIRTUAL%'"
    return [str(n) for n, sql in conn.execute(q).fetchall() if "fts5" in str(sql).lower()]


def _copy_index(path: Path, dest: sqlite3.Connection) -> None:
    """Read-only copy; a ledger on read-only media cannot take WAL locks, so fall back to the
    main file alone (then older: catching up with the log brings it level, nothing is lost)."""
    last: sqlite3.DatabaseError | None = None
    for query in ("mode=ro", "immutable=1"):
        try:
            src = sqlite3.connect(f"file:{path}?{query}", uri=True)
            try:
                src.backup(dest)
                return
            finally:
                src.close()
        except sqlite3.DatabaseError as e:
            last = e
    if last is None:
        raise sqlite3.DatabaseError(f"{path} could not be copied")
    raise last


def check_index(store: Store) -> list[Problem]:
    """Compare ``index.sqlite`` (caught up with the log, in memory) with a fresh fold of the log.

    Nothing is written: the index file is read-only here, and a missing index is not a problem
    (it is rebuilt on first use). The index is copied *before* the log is read, and both folds
    use that one reading of the log: a writer appending meanwhile cannot make them differ."""
    from .db import Index

    class _Snapshot(Index):
        def _log_from(self, at: int) -> Iterator[tuple[int, LogEntry]]:
            return ((pos, e) for pos, e in entries if pos >= at)

        def _diverged(self, at: int, head: str) -> int:
            # Not folded again (that would erase the edit): the entries past the last seq
            # folded are applied, and the rows that differ are reported.
            return self._fold(self._log_from(0), skip_to=self.last_seq()) or 0

    path = store.root / "index.sqlite"
    if not path.is_file():
        return []
    kept = sqlite3.connect(":memory:", isolation_level=None)
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    try:
        try:
            _copy_index(path, kept)
        except sqlite3.DatabaseError as e:
            return [Problem("index-mismatch", "index.sqlite", f"the index cannot be read ({e})")]
        # An index of another layout would be folded again from the start, hiding any edit:
        # a version that is not this ledger's is itself reported (any other command rebuilds
        # such an index on first use; `ledger reindex` does it now).
        from .db import INDEX_VERSION

        row = kept.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        has_log = kept.execute("SELECT 1 FROM meta WHERE key='last_seq'").fetchone() is not None
        if (row is not None or has_log) and (row is None or str(row[0]) != str(INDEX_VERSION)):
            version = "none" if row is None else repr(row[0])
            return [
                Problem(
                    "index-mismatch",
                    "index.sqlite",
                    f"the index says layout version {version}, this ledger writes "
                    f"{INDEX_VERSION}: written by another version of ledger, or edited; "
                    "`ledger reindex` rebuilds it",
                )
            ]
        entries = list(store.log.entries_from(0))
        # Entries appended since the index was last used are not differences: catch up first.
        _Snapshot(store, conn=kept).sync()
        _Snapshot(store, conn=fresh).rebuild()
        found = []
        row = kept.execute("SELECT value FROM meta WHERE key='log_rewritten'").fetchone()
        if row is not None:
            kept.execute("DELETE FROM meta WHERE key='log_rewritten'")
            found.append(
                Problem(
                    "index-mismatch",
                    "log/chain.jsonl",
                    f"the log no longer holds the line the index had folded last ({row[0]}): "
                    "its history was edited, cut or rewritten after it was indexed",
                )
            )
        return found + _compare(fresh, kept, lambda oid: not store.objects.has(str(oid)))
    finally:
        kept.close()
        fresh.close()


def check_consistency(store: Store) -> list[Problem]:
    """Every difference between what the log and records say and what the index and the log
    lines themselves say."""
    return check_log_records(store) + check_index(store)
