"""What ``ls`` and ``show`` display comes from hashed records, never from the index alone.

The index is a cache anyone can edit with ``sqlite3``. It still decides *which* runs to look
at (fast), but each row shown is rebuilt from the record its ref names, read through the
object store (which re-hashes it). Where the index disagrees, the record wins and a warning
tells the user to run ``ledger verify`` and ``ledger reindex``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._hashing import OID_RE
from ..errors import LedgerError
from ..store import Store
from ..store.refs import MAX_REF
from ..store.safe_read import NotRegularError, read_regular
from ._indexers import bindable
from .rows import run_row

__all__ = [
    "REINDEX_HINT",
    "checked_curation",
    "checked_runs",
    "checked_verdicts",
    "newest_runs",
]

REINDEX_HINT = "run `ledger verify` to see every difference, then `ledger reindex`"


def _record(store: Store, oid: str | None, warnings: list[str], what: str) -> dict[str, Any] | None:
    if oid is None or not OID_RE.match(oid):
        warnings.append(f"{what} has no valid ref; not shown")
        return None
    try:
        value = store.get_json(oid)  # re-hashed on read
    except LedgerError as e:
        warnings.append(f"{what}: {e.message}; not shown")
        return None
    if not isinstance(value, dict):
        warnings.append(f"{what}: {oid} is not a record; not shown")
        return None
    return value


class _Log:
    """The fold of the log, made only when a ref file and the index disagree: the log is the
    commit point, so it says which of the two to believe."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._values: dict[str, str] | None = None

    def backs(self, ref: str, oid: str | None, warnings: list[str], what: str) -> bool:
        if self._values is None:
            self._values = self.store.ref_state_from_log()
        logged = self._values.get(ref)
        if logged == oid:
            return True
        said = "no accepted log line made it" if logged is None else f"the log says {logged}"
        warnings.append(
            f"{what}: its ref file holds {oid or 'nothing'}, but {said}; not shown "
            "(written behind the log's back, or a crash cut the write short)"
        )
        return False


def _ref(store: Store, ref: str) -> str | None:
    """The ref's text (checked by ``_record``), or None once it is gone."""
    try:
        raw = read_regular(store.refs.root.joinpath(*ref.split("/")), MAX_REF)
        return raw.decode("ascii", errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotRegularError:
        return ""  # a FIFO, a link, a huge file: no valid ref (``_record`` says so)


def checked_runs(
    store: Store,
    index_rows: list[dict[str, Any]],
    warnings: list[str],
    *,
    every_run: bool = True,
) -> Iterator[dict[str, Any]]:
    """Runs newest first, each row rebuilt from its record, with a warning for each index row
    that is missing, extra or different. ``every_run``: the ``index_rows`` are the whole
    ``runs`` table, so a run ref without a row is missing from it. Lazy: a caller that stops
    early reads only the records it showed."""
    if not every_run:  # each row's ref file is read: no listing of every run
        yield from _checked(store, set(), index_rows, warnings, every_run=False, listed=False)
        return
    # Names only (a directory listing); each shown run's ref is read when it is reached.
    names = set(store.refs.names("runs/"))
    yield from _checked(store, names, index_rows, warnings, every_run=True)


def newest_runs(
    store: Store,
    refs_below: Callable[[str | None, int], list[str]],
    rows_between: Callable[[str | None, str | None], list[dict[str, Any]]],
    warnings: list[str],
    *,
    chunk: int = 256,
) -> Iterator[dict[str, Any]]:
    """``checked_runs`` over every run, a slice at a time, so that a page costs a page
    whatever the number of runs. ``refs_below(hi, n)``: the ``n`` greatest run ref names below
    ``hi`` (None: any), from the index's ``refs`` table, which is the fold of the hash-chained
    log (the commit point of every ref change), not of the ``runs`` rows being checked;
    ``rows_between(lo, hi)``: the ``runs`` rows with ``lo <= ref < hi``. Each ref shown is read
    from its file and its record re-hashed, as in ``checked_runs``; a ref file that no log
    entry made is ``ledger verify``'s to report."""
    hi: str | None = None
    while True:
        part = refs_below(hi, chunk)
        lo = part[-1] if len(part) == chunk else None
        rows = rows_between(lo, hi)
        yield from _checked(store, set(part), rows, warnings, every_run=True, listed=False)
        if lo is None:
            return
        hi = lo


def _malformed(rec: dict[str, Any]) -> str | None:
    from ..records.base import malformed_reason  # pydantic: not on ``ls``'s usual path

    return malformed_reason(rec)


def _checked(
    store: Store,
    names: set[str],
    index_rows: list[dict[str, Any]],
    warnings: list[str],
    *,
    every_run: bool,
    listed: bool = True,
) -> Iterator[dict[str, Any]]:
    """``names``: the run refs that exist (``listed``: as listed from the refs folder, so a ref
    not among them is not read)."""
    by_ref = {row["ref"]: row for row in index_rows}
    wanted = names | set(by_ref) if every_run else set(by_ref)
    log = _Log(store)
    for ref in sorted(wanted, reverse=True):
        run_id = ref.split("/", 1)[1]
        oid = _ref(store, ref) if ref in names or not listed else None
        if oid is None:
            warnings.append(f"the index lists run {run_id}, which the ledger does not hold")
            continue
        row = by_ref.get(ref)
        if (row is None or row.get("oid") != oid) and not log.backs(
            ref, oid, warnings, f"run {run_id}"
        ):
            continue
        rec = _record(store, oid, warnings, f"run {run_id}")
        if rec is None or rec.get("kind") != "run":
            if rec is not None:
                warnings.append(f"run {run_id}: its ref names a {rec.get('kind')} record")
            continue
        trusted = run_row(ref, oid, rec)
        row = by_ref.get(ref)
        if row is None:
            warnings.append(f"the index lacks run {run_id}; shown from its record")
        else:
            # A field SQLite could not take as it was (a list where a name goes) is indexed as
            # its JSON text (``bindable``): the same value, not a difference.
            diff = sorted(
                k for k, v in trusted.items() if row.get(k) != v and (row.get(k),) != bindable((v,))
            )
            malformed = _malformed(rec) if diff else None  # only where it differs: pydantic
            if malformed is not None:  # reindexing would not help: the record is at fault
                warnings.append(
                    f"run {run_id}'s record is malformed ({malformed}); shown as it is "
                    "(`ledger verify` names every such record)"
                )
            elif diff:
                warnings.append(
                    f"the index disagrees with run {run_id}'s record on {', '.join(diff)}; "
                    "showing the record"
                )
        yield trusted


def checked_verdicts(
    store: Store, run_id: str, index_rows: list[dict[str, Any]], warnings: list[str]
) -> list[dict[str, Any]]:
    """The verdicts about ``run_id`` the index names, each read back from its record."""
    out: list[dict[str, Any]] = []
    log = _Log(store)
    for row in index_rows:
        ref = row.get("ref")
        oid = store.refs.get(ref) if isinstance(ref, str) else None
        if (
            isinstance(ref, str)
            and row.get("oid") != oid
            and not log.backs(ref, oid, warnings, f"verdict {ref}")
        ):
            continue
        rec = _record(store, oid, warnings, f"verdict {ref}")
        if rec is None:
            continue
        got = rec.get("replays")
        replays = got if isinstance(got, list) else []  # a hand-written record: anything
        if rec.get("kind") != "verdict" or run_id not in [rec.get("original"), *replays]:
            warnings.append(f"the index names verdict {ref}, whose record is not about {run_id}")
            continue
        trusted = {
            "oid": oid,
            "original": rec.get("original"),
            "replays": replays,
            "mode": rec.get("mode"),
            "outcome": rec.get("outcome"),
            "summary": rec.get("summary"),
            "created": rec.get("created"),
        }
        if row.get("outcome") != trusted["outcome"] or row.get("oid") != oid:
            warnings.append(f"the index disagrees with verdict {ref}'s record; showing the record")
        out.append(trusted)
    return out


def checked_curation(
    store: Store, run_ids: list[str], indexed: dict[str, str], warnings: list[str]
) -> dict[str, dict[str, Any]]:
    """The curation record (name, tags, retraction) of each of ``run_ids`` that has one, read
    from its ref file and re-hashed. ``indexed``: what the index says each ``curation/<run>``
    ref holds. The ref file of every run is read, so an edited index can neither hide a
    retraction nor invent one; where the two disagree, the log decides (as for runs)."""
    out: dict[str, dict[str, Any]] = {}
    log = _Log(store)
    for run_id in run_ids:
        ref = f"curation/{run_id}"
        oid = _ref(store, ref)
        what = f"the curation of run {run_id}"
        if oid is None:
            if run_id in indexed:
                warnings.append(f"the index lists {what}, which the ledger does not hold")
            continue
        if indexed.get(run_id) != oid:
            if not log.backs(ref, oid, warnings, what):
                continue
            warnings.append(f"the index disagrees with {what}; read from its record")
        rec = _record(store, oid, warnings, what)
        if rec is None:
            continue
        if rec.get("kind") != "curation" or rec.get("run_id") != run_id:
            warnings.append(f"{what}: its ref names a record that is not about it; not used")
            continue
        out[run_id] = rec
    return out
