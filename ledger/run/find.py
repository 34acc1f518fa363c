"""Finding runs: by id, prefix, short id or name (``resolve_run``, ``load_run``), and listing
them (``list_runs``). Run ids themselves are made in ``ledger.run.ids``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import AmbiguousIdError, IntegrityError, LedgerError, UnknownIdError
from ..index.short_ids import match_short_id
from ..store import Store
from ..store.safe_read import NotRegularError
from .ids import new_run_id, run_ref

if TYPE_CHECKING:
    from ..index import Index
    from ..index.query import Filter
    from ..index.search import Search
    from ..records.run import Run

__all__ = [
    "backed_record",
    "backed_ref",
    "backed_refs",
    "load_run",
    "new_run_id",
    "newest_run",
    "resolve_run",
    "run_model",
    "run_ref",
]


def resolve_run(store: Store, text: str) -> str:
    """A run id from an id, a unique id prefix, or a run name (its newest original run). Ids,
    prefixes, names and short ids are looked up in the index, whose ``refs`` table is the fold
    of the hash-chained log (``ledger.store.fold``), and a name is confirmed on the record. A
    run whose ``runs/`` ref file the log does not back (no accepted line made it, or it holds
    another record than the log says: ``ledger verify``'s ``ref-mismatch``) is refused with
    IntegrityError, never taken for a run."""
    return _resolve(store, text)[0]


def _resolve(store: Store, text: str) -> tuple[str, str]:
    """(run id, its record id), the ref file backed by the log (one index opened)."""
    from ..index import Index

    with Index(store) as index:
        index.sync()
        run_id = _find(store, index, text)
        logged = _logged(index, run_ref(run_id))
    return run_id, _backed(store, run_id, logged)


def _find(store: Store, index: Index, text: str) -> str:
    if _logged(index, run_ref(text)) is not None:
        return text
    if _has_run(store, text):
        _backed(store, text, None)  # raises unless a writer just made it (seen under the lock)
        return text
    lo, hi = f"runs/{text}", f"runs/{text}\U0010ffff"
    matches = [
        str(r["name"]).split("/", 1)[1]
        for r in index.query(
            "SELECT name FROM refs WHERE name >= ? AND name < ? ORDER BY name", (lo, hi)
        )
    ]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise AmbiguousIdError(
            f"run id prefix {text!r} matches {len(matches)} runs",
            candidates=matches,
            hint="give more characters: " + ", ".join(matches[:5]),
        )
    named = _named(store, index, text)
    if named is not None:
        return named
    rows = index.query(
        "SELECT ref FROM run_tails WHERE tail >= ? AND tail < ? ORDER BY ref",
        (text, text + "\U0010ffff"),
    )
    by_short = match_short_id([str(r["ref"]).split("/", 1)[1] for r in rows], text)
    if len(by_short) == 1:
        return by_short[0]
    if len(by_short) > 1:
        raise AmbiguousIdError(
            f"short run id {text!r} matches {len(by_short)} runs",
            candidates=by_short,
            hint="give more characters: " + ", ".join(by_short[:5]),
        )
    raise UnknownIdError(
        f"no run {text!r} in {store.root}",
        hint="`ledger ls` lists runs; give an id, a unique id prefix, a short id, or a run name",
    )


def newest_run(store: Store) -> str:
    """The id of the run that started last, original or replay: what ``ledger show`` and
    ``ledger log`` mean without a run, as ``git log`` means HEAD. Run ids begin with their
    start time, so the newest is the greatest ``runs/`` ref."""
    from ..index import Index

    with Index(store) as index:
        index.sync()
        rows = index.query(
            "SELECT name FROM refs WHERE name >= ? AND name < ? ORDER BY name DESC LIMIT 1",
            ("runs/", "runs/\U0010ffff"),
        )
    if not rows:
        raise UnknownIdError(
            f"no runs in {store.root} yet", hint="`ledger record -- CMD ARGS` records one"
        )
    return str(rows[0]["name"]).split("/", 1)[1]


def _has_run(store: Store, run_id: str) -> bool:
    from ..store.refs import check_ref_name

    try:
        return store.refs.root.joinpath(*check_ref_name(run_ref(run_id)).split("/")).is_file()
    except (LedgerError, OSError):
        return False


def _logged(index: Index, ref: str) -> str | None:
    """What the fold of the log (the index's ``refs`` table) says ``ref`` holds."""
    rows = index.query("SELECT oid FROM refs WHERE name = ?", (ref,))
    return str(rows[0]["oid"]) if rows else None


def _unbacked(store: Store, ref: str, logged: str | None) -> IntegrityError:
    try:
        held = store.refs.get(ref)
    except LedgerError as e:  # say why: a FIFO, a link, bytes that are no object id
        held = f"what cannot be read ({e.message})"
    said = (
        "no accepted log line made it"
        if logged is None
        else f"it holds {held or 'nothing'}, but the log says {logged}"
    )
    what = f"of run {ref.split('/', 1)[1]}" if ref.startswith("runs/") else ref
    return IntegrityError(
        f"the ref file {what} is not backed by the log ({said}): it was written "
        "behind the log's back, by a log line that ledger refuses, or a crash cut the write "
        "short; it is not used",
        hint="run `ledger verify` to see every problem; `ledger reindex` completes a ref write "
        "a crash cut short",
    )


def backed_record(store: Store, run_id: str) -> str:
    """The record id of run ``run_id``: the fold of the log's, which the ref file must hold.
    Raises UnknownIdError when the log never made the run, IntegrityError when only the ref
    file names it or the two differ (checked again under the ref lock, which every writer
    holds from its log append to its ref write, so a write in flight is not mistaken)."""
    oid = backed_ref(store, run_ref(run_id))
    if oid is None:
        raise UnknownIdError(f"no run {run_id!r} in {store.root}")
    return oid


def backed_ref(store: Store, ref: str) -> str | None:
    """What ref ``ref`` (any kind: a run, verdict, checkpoint, audit, carried commit) holds,
    when its file holds what the fold of the log says; None when neither names anything.
    IntegrityError when only the file names it or the two differ. Every reader that takes a
    ref file to decide what to show, export, audit or load asks here (``backed_refs`` for a
    folder of refs), so a ref file written behind the log's back is never taken."""
    from ..index import Index

    with Index(store) as index:
        index.sync()
        logged = _logged(index, ref)
    return _backed_ref(store, ref, logged)


def backed_refs(
    store: Store, prefix: str, warnings: list[str] | None = None
) -> list[tuple[str, str]]:
    """(name, oid) of every ref under ``prefix`` whose file the log backs, by name. A ref file
    the log does not back, or a ref the log names whose file is missing or differs, is left
    out, and ``backed_ref``'s message for it is added to ``warnings``."""
    from ..index import Index

    with Index(store) as index:
        index.sync()
        rows = index.query(
            "SELECT name, oid FROM refs WHERE name >= ? AND name < ?",
            (prefix, prefix + "\U0010ffff"),
        )
    logged = {str(r["name"]): str(r["oid"]) for r in rows}
    files: dict[str, str | None] = {}
    for name in store.refs.names(prefix):
        try:
            files[name] = store.refs.get(name)
        except LedgerError:
            files[name] = None
    out: list[tuple[str, str]] = []
    for name in sorted(set(logged) | set(files)):
        oid = logged.get(name)
        if oid is None or files.get(name) != oid:
            try:
                oid = _backed_ref(store, name, oid)
            except IntegrityError as e:
                if warnings is not None:
                    warnings.append(f"{e.message}; run `ledger verify`")
                continue
        if oid is not None:
            out.append((name, oid))
    return out


def _backed(store: Store, run_id: str, logged: str | None) -> str:
    oid = _backed_ref(store, run_ref(run_id), logged)
    if oid is None:
        raise UnknownIdError(f"no run {run_id!r} in {store.root}")
    return oid


def _on_disk(store: Store, ref: str) -> str | None:
    """What the ref file holds; None when it cannot be read as a ref. A FIFO or a link where
    the ref file belongs is raised, named as what it is (NotRegularError)."""
    try:
        return store.refs.get(ref)
    except NotRegularError:
        raise
    except LedgerError:
        return None


def _backed_ref(store: Store, ref: str, logged: str | None) -> str | None:
    from ..index import Index

    on_disk = _on_disk(store, ref)
    if logged is not None and on_disk == logged:
        return logged
    for locked in (False, True):
        with contextlib.ExitStack() as held:
            if locked:
                try:
                    held.enter_context(store.lock())
                except OSError:  # a read-only ledger: no writer can be in flight
                    break
            with Index(store) as index:
                index.sync()
                logged = _logged(index, ref)
            on_disk = _on_disk(store, ref)
            if logged is not None and on_disk == logged:
                return logged
    if logged is None and on_disk is None:
        return None
    if on_disk is not None and logged is not None and on_disk == _before_last_move(store, ref):
        # A writer killed between its log append and its ref write: the file still holds what
        # the log's accepted lines held before, which is evidence the log backs; the next write
        # or `ledger reindex` completes the move (a checkpoint's ``latest`` stays loadable).
        return on_disk
    raise _unbacked(store, ref, logged)


def _before_last_move(store: Store, ref: str) -> str | None:
    """What ``ref`` held before the last line of the log that moved it and that the fold
    accepts (a refused line, chained or not, moves nothing)."""
    from ..store.fold import Fold

    fold, before = Fold(), None
    for entry in store.log.entries():
        held = fold.refs.get(ref)
        if fold.apply(entry.data) is None and entry.data.get("ref") == ref:
            before = None if held is None else held.oid
    return before


def _record_of(store: Store, run_id: str) -> dict[str, Any]:
    """A run record's JSON, or {} when it cannot be read."""
    return _json_at(store, run_ref(run_id))


def _json_at(store: Store, ref: str) -> dict[str, Any]:
    """The record a ref file names, or {} when it cannot be read."""
    oid = store.refs.get(ref)
    if oid is None:
        return {}
    try:
        value = store.get_json(oid)
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}


def _named(store: Store, index: Index, name: str) -> str | None:
    """The run ``name`` names. The index says which runs carry it (no record is read for the
    others); each candidate, newest first, is confirmed on its record."""
    renamed = index.query("SELECT run_id FROM curation WHERE name = ? ORDER BY run_id", (name,))
    for row in reversed(renamed):  # a name `ledger rename` gave, confirmed on its record
        rec = _json_at(store, f"curation/{row['run_id']}")
        if rec.get("name") == name and _record_of(store, row["run_id"]).get("replay_of") is None:
            return str(row["run_id"])
    rows = index.query("SELECT run_id FROM runs WHERE name = ? ORDER BY run_id", (name,))
    # A replay carries its original's name but never takes it over: the name is the newest
    # original's; only when no original holds it any more does the newest replay answer.
    newest_replay = None
    for row in reversed(rows):
        record = _record_of(store, row["run_id"])
        if record.get("name") != name:
            continue  # the index disagrees with the record: the record decides
        if record.get("replay_of") is None:
            return str(row["run_id"])
        newest_replay = newest_replay or str(row["run_id"])
    return newest_replay


def load_run(store: Store, text: str) -> tuple[str, Run]:
    """(record oid, Run) for an id, prefix or name."""
    run_id, oid = _resolve(store, text)
    return oid, run_model(store.get_json(oid), run_id, oid)


def run_model(value: Any, run_id: str, oid: str) -> Run:
    """Run ``run_id``'s stored record ``value`` (object ``oid``) as the model; one that does not
    fit it is refused naming the run and record (MalformedRecordError, exit 5)."""
    from ..errors import MalformedRecordError
    from ..records.base import record_from_json
    from ..records.run import Run

    try:
        return record_from_json(value, Run)
    except MalformedRecordError as e:  # named: the reader asked for a run, not an object
        what = f"run {run_id}'s record {oid}"
        raise MalformedRecordError(e.kind, e.where, e.reason, what=what) from None


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_runs(
    store: Store,
    *,
    name: str | None = None,
    status: str | None = None,
    tags: dict[str, str] | None = None,
    contract: str | None = None,
    limit: int = 50,
    replays: bool = False,
    warnings: list[str] | None = None,
    where: Sequence[Filter] = (),
    columns: Sequence[str] | None = None,
    search: Search | None = None,
    retracted: bool = False,
    with_values: bool = False,
) -> list[dict[str, Any]]:
    """Original runs newest first, each with ``replays``, how many replays it has (replays of
    replays included). The filters and ``limit`` select originals; with ``replays=True``
    each is followed by its replays, oldest first, each with ``original`` set. Each row
    shown is rebuilt from its hashed record (``ledger.index.checked``); where the index
    disagrees, the record wins and a line is added to ``warnings``. A ``running`` run whose
    recorder process is gone on this host is reported as ``abandoned``. ``where``
    (``ledger.index.query``): only originals matching every filter, checked on the record;
    ``columns``: each row gets ``columns``, those values read from the record; ``search``
    (``ledger.index.search``): only originals whose name, tags, command or notes match,
    picked by the full-text index and matched again on the record;
    ``with_values``: each row gets ``values``, every one of them (``run_values``).
    A run's curation (``ledger tag``, ``rename``, ``retract``) is read from its own record
    and laid over the run's: its name, its tags, and ``retracted`` (None, or the reason and
    time); retracted runs are left out unless ``retracted``."""
    import json
    import socket

    from ..index import Index
    from ..index.checked import checked_curation, checked_runs, newest_runs
    from ..index.search import curated_text, run_text
    from ..index.tables import run_values
    from .lineage import original_ids

    if contract is not None and not contract.startswith("b3:"):
        contract = "b3:" + contract
    host = socket.gethostname()

    def shown(row: dict[str, Any]) -> dict[str, Any]:
        row["tags"] = json.loads(row["tags"] or "{}")
        if row["status"] == "running" and row["host"] == host and not is_alive(int(row["pid"])):
            row["status"] = "abandoned"
        return row

    def record_of(row: dict[str, Any]) -> dict[str, Any]:
        try:
            rec = store.get_json(row["oid"])
        except LedgerError:
            return {}
        return rec if isinstance(rec, dict) else {}

    def curated(row: dict[str, Any], index: Index, notes: list[str]) -> dict[str, Any]:
        """``row`` with its curation laid over it (read back from the curation record)."""
        if "oids" not in cache:  # what the index says, once per listing
            rows = index.query("SELECT run_id, oid FROM curation")
            cache["oids"] = {str(r["run_id"]): str(r["oid"]) for r in rows}
        found = checked_curation(store, [row["run_id"]], cache["oids"], notes)
        return apply_curation(row, found.get(row["run_id"]))

    def extra(row: dict[str, Any]) -> dict[str, Any] | None:
        """The record's values, when filters or columns need them."""
        if not where and columns is None and not with_values:
            return {}
        try:
            rec = store.get_json(row["oid"])
        except LedgerError:
            return None
        values = run_values(store, rec if isinstance(rec, dict) else {})
        values["name"] = row["name"]  # curated
        values.update({f"tags.{k}": v for k, v in row["tags"].items()})
        return values

    def select(
        index: Index,
        notes: list[str],
        candidates: Iterator[list[dict[str, Any]]] | None = None,
    ) -> list[dict[str, Any]]:
        # Which runs are replays of which original comes from the index (cheap: the replays
        # and their parents only); each row shown is then read back from its record.
        linked = index.query(_LINKED)
        roots = original_ids({r["run_id"]: r["replay_of"] for r in linked})
        under: dict[str, list[dict[str, Any]]] = {}
        for r in linked:
            if r["replay_of"] is not None and roots[r["run_id"]] != r["run_id"]:
                under.setdefault(roots[r["run_id"]], []).append(r)
        out: list[dict[str, Any]] = []
        originals = 0
        walk = (
            newest_runs(
                store,
                lambda hi, n: _refs_below(index, hi, n),
                lambda lo, hi: _rows_between(index, lo, hi),
                notes,
            )
            if candidates is None
            else (
                row
                for part in candidates
                for row in checked_runs(store, part, notes, every_run=False)
            )
        )
        for row in walk:
            run_id = row["run_id"]
            if row["replay_of"] is not None and roots.get(run_id, run_id) != run_id:
                continue  # a replay: listed under its original
            row = curated(shown(row), index, notes)
            if row["retracted"] is not None and not retracted:
                continue
            if name is not None and row["name"] != name:
                continue
            if contract is not None and not str(row["contract_digest"] or "").startswith(contract):
                continue
            if status is not None and row["status"] != status:
                continue
            if tags and any(row["tags"].get(k) != v for k, v in tags.items()):
                continue
            values = extra(row)
            if values is None or not all(f.matches(values) for f in where):
                continue
            if search is not None and not search.matches(
                curated_text(run_text(store, record_of(row)), row)
            ):
                continue
            if columns is not None:
                row["columns"] = {c: values.get(c) for c in columns}
            if with_values:
                row["values"] = values
            mine = under.get(run_id, [])
            row["replays"] = len(mine)
            out.append(row)
            if replays and mine:
                for sub in reversed(list(checked_runs(store, mine, notes, every_run=False))):
                    sub = curated(shown(sub), index, notes)
                    if columns is not None or with_values:
                        sub_values = extra(sub) or {}
                        if columns is not None:
                            sub["columns"] = {c: sub_values.get(c) for c in columns}
                        if with_values:
                            sub["values"] = sub_values
                    sub["original"] = run_id
                    out.append(sub)
            originals += 1
            if originals >= limit:
                break
        return out

    def candidates(index: Index) -> Iterator[list[dict[str, Any]]] | None:
        """The runs the index says match ``where`` and ``search``, newest first, a slice at a
        time."""
        if not where and search is None:
            return None
        parts = [f.sql() for f in where] + ([search.sql()] if search is not None else [])
        sql = " AND ".join(p[0] for p in parts)
        args = tuple(a for p in parts for a in p[1])

        def slices() -> Iterator[list[dict[str, Any]]]:
            q = f"SELECT r.* FROM runs r WHERE ({sql})"
            rows = index.query(q + " ORDER BY r.ref DESC LIMIT ?", (*args, _SLICE))
            while rows:
                yield rows
                if len(rows) < _SLICE:
                    return
                rows = index.query(
                    q + " AND r.ref < ? ORDER BY r.ref DESC LIMIT ?",
                    (*args, rows[-1]["ref"], _SLICE),
                )

        return slices()

    cache: dict[str, dict[str, str]] = {}
    with Index(store) as index:
        index.sync()
        notes: list[str] = []
        out = select(index, notes, candidates(index))
        # A run sealed between the sync and reading its record is not a disagreement: if the
        # log moved on meanwhile, catch up once and look again.
        if notes and index.sync():
            notes = []
            cache.clear()
            out = select(index, notes, candidates(index))
    if warnings is not None:
        warnings += notes
    return out


_SLICE = 256  # index rows read at a time when listing runs

# The replays and the runs they replay: enough to tell each run's original. Two lookups on
# the replay_of and run_id indexes: with ``replay_of IS NOT NULL OR run_id IN (...)`` SQLite
# read every row of ``runs`` (70 ms of each ``ls`` at 10^5 runs), and it takes ``IS NOT NULL``
# for a scan too; every replay_of is a run id, text, so ``>= ''`` is the same set.
_LINKED = (
    "SELECT * FROM runs WHERE replay_of >= '' "
    "UNION SELECT * FROM runs WHERE run_id IN (SELECT replay_of FROM runs WHERE replay_of >= '')"
)


def _refs_below(index: Any, hi: str | None, n: int) -> list[str]:
    """The ``n`` greatest run ref names below ``hi`` in the index's ``refs`` table."""
    sql = "SELECT name FROM refs WHERE name >= 'runs/' AND name < ?"
    sql += " ORDER BY name DESC LIMIT ?"
    return [r["name"] for r in index.query(sql, ("runs0" if hi is None else hi, n))]


def _rows_between(index: Any, lo: str | None, hi: str | None) -> list[dict[str, Any]]:
    """``runs`` rows with ``lo <= ref < hi`` (None: no bound)."""
    where = [c for c, bound in (("ref >= ?", lo), ("ref < ?", hi)) if bound is not None]
    sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
    return list(index.query(sql, tuple(b for b in (lo, hi) if b is not None)))


def apply_curation(row: dict[str, Any], curation: dict[str, Any] | None) -> dict[str, Any]:
    """A run row (``name``, ``tags`` as a dict) with its curation record laid over it: the
    curated name, the curated tags over the recorded ones, and ``retracted`` (None, or
    ``{"reason", "time"}``). The recorded name is kept as ``recorded_name``."""
    row["recorded_name"] = row.get("name")
    row["retracted"] = None
    if curation is None:
        return row
    name, tags = curation.get("name"), curation.get("tags")
    if isinstance(name, str):
        row["name"] = name
    if isinstance(tags, dict):
        row["tags"] = {**(row.get("tags") or {}), **{str(k): str(v) for k, v in tags.items()}}
    if curation.get("retracted") is True:
        row["retracted"] = {"reason": curation.get("reason"), "time": curation.get("created")}
    return row
