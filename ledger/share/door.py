"""The door: the one check every way into a ledger passes before it makes a ref.

Package import, pull, clone and MLflow import each bring objects (hashed as they arrive), then
refs, each made under an ``import`` log line naming where it came from. Before the first ref is
made, ``admit`` runs on every ref to be made the checks ``ledger verify`` runs once it is here,
through verify's own functions, and refuses the whole arrival if one fails:

- every object the ref reaches through required links is here (``store.walk.reachable``, the
  walk ``verify_store`` makes), each touched on the way so that gc keeps it until the ref is
  made (a content link to an input left out with ``--no-data`` is not required, as in verify);
- the log line it will write passes ``index.consistency.check_new_lines``: a ref holds a record
  of its kind that names it (``runs/X`` a run record of run X), a run only once sealed, and
  only refs an import may make (not ``checks/`` or ``gates/``);
- a carried commit is the commit it names, file by file (``capture.gitsource``).

A curation ref (``curation/<run_id>``) is not made like the others: its chain of records is
checked link by link and appended with its own ops (``curation_chain``: a chain brought that
the chain here holds changes nothing, one that extends it is appended, diverged chains are
refused), so a pulled retraction is never dropped.

A refused arrival makes no ref and no log line; the objects it already stored stay unreferenced
until gc takes them. A ref already here is left alone: equal, it is already here; different, it
is a collision, reported and never overwritten.

``entry_lease`` is the staging lease a recorder holds (``store.staging``): gc keeps every object
written or touched since it was taken. Imports and pulls hold it from their first object to
their last ref, so gc never takes an object between its arrival and the ref that links it.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .._canonical import format_datetime
from ..capture.gitsource import check_git_source
from ..errors import IntegrityError, LedgerError
from ..index.consistency import check_new_lines
from ..records.base import record_from_json
from ..records.source import GitSource
from ..store import Store
from ..store.staging import open_staging, release_staging, scan_staging
from ..store.verify import Problem
from ..store.walk import reachable
from .curation_chain import CURATION_PREFIX, Link, curation_links

__all__ = ["Arrival", "RefsReport", "admit", "door_problems", "entry_lease", "from_origin"]

# Sources and runs first: a verdict or checkpoint line then names records already here.
_ORDER = ("sources/", "runs/", "verdicts/", "checkpoints/")
_SHOWN = 5  # problems a refusal names
_LEASE_NAMES = ("import-", "pull-")


@dataclass(frozen=True)
class Arrival:
    """A ref a way in wants to make: its name, its object, and the note of its log line."""

    ref: str
    oid: str
    note: dict[str, Any]


@dataclass
class RefsReport:
    added: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already here, same object
    collisions: list[tuple[str, str, str]] = field(default_factory=list)  # name, here, theirs


def from_origin(refs: dict[str, str], origin: dict[str, Any]) -> list[Arrival]:
    """The arrivals of refs pushed or packaged by ledger ``origin`` (its id and chain head)."""
    note = {"origin": origin.get("ledger"), "origin_head": origin.get("head")}
    return [Arrival(name, oid, dict(note)) for name, oid in refs.items()]


def _rank(a: Arrival) -> tuple[int, str]:
    for i, prefix in enumerate(_ORDER):
        if a.ref.startswith(prefix):
            return i, a.ref
    return len(_ORDER), a.ref


def _to_make(store: Store, arrivals: list[Arrival]) -> list[Arrival]:
    """The arrivals that will make a ref, in the order they will: the first of each name
    that this ledger lacks (a later one of the same name is then present or a collision)."""
    out, named = [], set()
    for a in sorted(arrivals, key=_rank):
        if a.ref not in named and store.refs.get(a.ref) is None:
            out.append(a)
        named.add(a.ref)
    return out


def _run_problems(store: Store, a: Arrival) -> list[Problem]:
    """A run ref's record must be one this ledger reads: a record whose fields are not what a
    run's are (a name that is a list, a status that is a number) would otherwise be let in and
    break every command that lists the runs. ``ledger export`` never writes one."""
    if not a.ref.startswith("runs/") or not store.objects.has(a.oid):
        return []  # the line check names a missing object
    from ..records.run import Run

    try:
        record_from_json(store.get_json(a.oid), Run)
    except (LedgerError, ValueError) as e:  # pydantic's ValidationError is a ValueError
        first = str(e).strip().splitlines()
        why = "; ".join(line.strip() for line in first[:3])
        return [
            Problem(
                "bad-record",
                a.ref,
                f"{a.ref}'s record {a.oid} is not a run record ledger reads: {why}",
            )
        ]
    return []


def _source_problems(store: Store, a: Arrival) -> list[Problem]:
    if not a.ref.startswith("sources/git/") or not store.objects.has(a.oid):
        return []  # the line check names a missing object or a record of another kind
    try:
        src = record_from_json(store.get_json(a.oid), GitSource)
    except (LedgerError, ValueError):
        return []  # not a git-source record: the line check says so
    return [
        Problem("forged-source", a.ref, f"{a.ref} is not that commit: {p}")
        for p in check_git_source(store, src)
    ]


def _plan(store: Store, arrivals: list[Arrival]) -> tuple[list[Arrival], list[Link], list[Problem]]:
    """The refs to make, the curation links to append (``curation_chain``) and what
    ``ledger verify`` would report once they are (nothing: ``[]``)."""
    plain = [a for a in arrivals if not a.ref.startswith(CURATION_PREFIX)]
    make = _to_make(store, plain)
    brought: dict[str, dict[str, dict[str, Any]]] = {}
    for a in arrivals:
        if a.ref.startswith(CURATION_PREFIX):
            brought.setdefault(a.ref, {}).setdefault(a.oid, a.note)
    links: list[Link] = []
    problems: list[Problem] = []
    for ref, heads in sorted(brought.items()):
        got, wrong = curation_links(store, ref, heads)
        links += got
        problems += wrong

    def missing(oid: str, parent: str | None) -> None:
        if parent is None:
            names = ", ".join(sorted({a.ref for a in arrivals if a.oid == oid}))
            text = f"ref {names} points at {oid}, which is neither here nor brought"
        else:
            text = f"record {parent} links to {oid}, which is neither here nor brought"
        problems.append(Problem("missing-object", oid, text))

    roots = [a.oid for a in make] + [oid for heads in brought.values() for oid in heads]
    reachable(store.objects, roots, on_missing=missing, touch=True)
    now = format_datetime(datetime.now(UTC))
    lines = [
        {**a.note, "op": "import", "ref": a.ref, "old": None, "new": a.oid, "time": now}
        for a in make
    ] + [
        {**k.note, "op": k.op, "ref": k.ref, "old": k.old, "new": k.oid, "time": now} for k in links
    ]
    problems += check_new_lines(store, lines)
    for a in make:
        problems += _run_problems(store, a)
        problems += _source_problems(store, a)
    return make, links, problems


def door_problems(store: Store, arrivals: list[Arrival]) -> list[Problem]:
    """What ``ledger verify`` would report once ``arrivals`` are made (nothing: ``[]``)."""
    with store.lock("curation"):
        return _plan(store, arrivals)[2]


def admit(store: Store, arrivals: list[Arrival], *, source: str, hint: str) -> RefsReport:
    """Make every ref of ``arrivals`` this ledger lacks, and bring each curation chain up to
    date (``curation_chain``), once all pass the door; else raise IntegrityError (exit 5)
    naming what failed, having made nothing. Curation is planned and written under the lock
    ``ledger tag`` holds, so the chain here cannot move in between."""
    with store.lock("curation"):
        _, links, problems = _plan(store, arrivals)
        if problems:
            shown = "; ".join(
                f"{p.subject}: {p.message}" if p.kind == "log-record" else p.message
                for p in problems[:_SHOWN]
            )
            more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
            raise IntegrityError(
                f"{source} holds what `ledger verify` would reject here, so nothing was added: "
                f"{shown}{more}",
                hint=hint,
            )
        report = RefsReport()
        for a in sorted(arrivals, key=_rank):
            if a.ref.startswith(CURATION_PREFIX):
                continue
            here = store.create_ref(a.ref, a.oid, op="import", **a.note)
            if here is None:
                report.added.append(a.ref)
            elif here == a.oid:
                report.present.append(a.ref)
            else:
                report.collisions.append((a.ref, here, a.oid))
        if links:
            store.set_refs([(k.ref, k.oid, k.op, k.note) for k in links])
        moved = {k.ref for k in links}
        report.added += sorted(moved)
        report.present += sorted(
            {a.ref for a in arrivals if a.ref.startswith(CURATION_PREFIX)} - moved
        )
    return report


@contextlib.contextmanager
def entry_lease(store: Store, what: str) -> Iterator[None]:
    """Hold a staging lease named ``<what>-<random>`` (``what``: import or pull) while the body
    runs (see the module docstring): gc keeps every object written or touched meanwhile. The
    lease folders of imports and pulls that were killed are removed first."""
    root = store.root / "staging"
    for gone in scan_staging(root):  # killed imports' and pulls' (empty) lease folders
        if not gone.live and gone.run_id.startswith(_LEASE_NAMES):
            shutil.rmtree(gone.path, ignore_errors=True)
    path = root / f"{what}-{uuid.uuid4().hex[:12]}"
    fd = open_staging(path)
    try:
        yield
    finally:
        release_staging(path, fd)
