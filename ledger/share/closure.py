"""What a set of runs needs to travel: their refs and every object those refs reach.

The refs of a run are ``runs/<id>``, its curation ``curation/<id>`` (``ledger tag``,
``rename``, ``retract``: the chain of records travels through their ``previous`` links), its
verdicts ``verdicts/<id>/…`` with the replay runs they name, its checkpoint refs, and
``sources/git/<commit>`` for its code's commit (carried from the repository the run was
recorded in: ``capture/gitsource.py``). The objects are what gc keeps
for those refs (``store.walk.reachable``): the same reachability, so whatever survives gc and
replays here travels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..capture.gitsource import find_git_source, source_ref, store_git_source
from ..errors import LedgerError, UsageError
from ..records.base import R, record_from_json
from ..records.code import CodeSnapshot
from ..records.contract import Contract
from ..records.data import DataManifest, InputDigest
from ..records.run import Run
from ..run.find import backed_record, backed_ref, backed_refs, resolve_run
from ..store import Store
from ..store.walk import links_of, reachable

__all__ = ["Closure", "LeftOut", "commit_of_run", "run_closure"]


@dataclass
class LeftOut:
    """An input left out with ``--no-data``: its digest, size and where to fetch it."""

    run_id: str
    path: str
    digest: str
    n_bytes: int
    fetch: str  # "dvc: <remote/source>" or "" when nobody knows


@dataclass
class Closure:
    runs: list[str]  # the runs asked for
    refs: dict[str, str]
    objects: set[str]
    left_out: list[LeftOut] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _record(store: Store, oid: str, model: type[R]) -> R:
    return record_from_json(store.get_json(oid), model)


def _run_refs(
    store: Store, run_id: str, refs: dict[str, str], queue: list[str], notes: list[str]
) -> None:
    """A run's refs, each as the log backs it (``ledger.run.find``): a run whose ref file the
    log does not back is refused; a verdict or checkpoint ref file it does not back is left
    out, with a note."""
    refs[f"runs/{run_id}"] = backed_record(store, run_id)
    curation = backed_ref(store, f"curation/{run_id}")  # its tags, name, retraction travel
    if curation is not None:
        refs[f"curation/{run_id}"] = curation
    for prefix in (f"verdicts/{run_id}/", f"checkpoints/{run_id}/"):
        for name, target in backed_refs(store, prefix, notes):
            refs[name] = target
            if prefix.startswith("verdicts/"):
                verdict = store.get_json(target)
                replays = verdict.get("replays") if isinstance(verdict, dict) else None
                if isinstance(replays, list):  # else malformed: the export's door refuses it
                    queue += [r for r in replays if isinstance(r, str)]


def commit_of_run(store: Store, run_oid: str) -> str | None:
    """The commit a run's code was recorded at (None outside a repository), from its record."""
    run = _record(store, run_oid, Run)
    if run.contract is None:  # an imported run: no code was recorded
        return None
    contract = _record(store, run.contract, Contract)
    code = _record(store, contract.code, CodeSnapshot)
    return code.commit if code.in_repo else None


def _carry_code(store: Store, run: Run, refs: dict[str, str], notes: list[str]) -> None:
    if run.contract is None:
        return  # imported: no code was captured
    contract = _record(store, run.contract, Contract)
    code = _record(store, contract.code, CodeSnapshot)
    if not code.in_repo or code.commit is None:
        return
    name = source_ref(code.commit)
    if name in refs:
        return
    if find_git_source(store, code.commit) is None:
        try:
            store_git_source(store, Path(code.root), code.commit)
        except LedgerError as e:
            notes.append(
                f"run {run.run_id}: commit {code.commit} is not carried ({e.message}); a "
                "reviewer needs a clone of the repository to replay it"
            )
            return
    try:
        oid = backed_ref(store, name)
    except LedgerError as e:
        notes.append(f"run {run.run_id}: commit {code.commit} is not carried: {e.message}")
        return
    if oid is None:  # removed meanwhile (ledger gc, another process)
        raise UsageError(f"commit {code.commit}'s source ref {name} vanished", hint="run it again")
    refs[name] = oid


def _input_objects(
    store: Store, run_id: str, contract: Contract
) -> list[tuple[InputDigest, set[str]]]:
    out = []
    for raw in contract.inputs:
        d = InputDigest.model_validate(raw)
        oids = {d.digest}
        if d.files is not None and store.objects.has(d.files):
            manifest = _record(store, d.files, DataManifest)
            oids |= {e.digest for e in manifest.entries if e.digest is not None}
        out.append((d, oids))
    return out


def run_closure(store: Store, run_texts: list[str], *, data: bool = True) -> Closure:
    """The refs and objects ``run_texts`` (ids or prefixes) need to replay and be audited
    elsewhere. ``data=False`` leaves input contents out and lists them in ``left_out``."""
    asked = list(dict.fromkeys(resolve_run(store, t) for t in run_texts))
    queue = list(asked)
    refs: dict[str, str] = {}
    notes: list[str] = []
    done: list[str] = []
    while queue:
        run_id = queue.pop(0)
        if run_id in done:
            continue
        done.append(run_id)
        _run_refs(store, run_id, refs, queue, notes)
        run = _record(store, refs[f"runs/{run_id}"], Run)
        _carry_code(store, run, refs, notes)
    objects = reachable(store.objects, refs.values())
    left_out: list[LeftOut] = []
    if not data:
        # An input's content that a record links to (a committed file of a carried commit,
        # say) travels anyway: leaving it out would make a package `ledger verify` rejects.
        needed = {c for oid in objects for c, req in links_of(store.objects, oid) if req}
        for run_id in done:
            run = _record(store, refs[f"runs/{run_id}"], Run)
            if run.contract is None:
                continue  # imported: no inputs were captured
            contract = _record(store, run.contract, Contract)
            for d, oids in _input_objects(store, run_id, contract):
                dropped = (oids & objects) - needed
                if d.kind == "dir" and d.files is not None:
                    dropped.discard(d.files)  # the listing stays: it names every file's digest
                if not dropped:
                    continue
                objects -= dropped
                fetch = f"dvc: {d.dvc.source} in {d.dvc.repo_root}" if d.dvc else ""
                left_out.append(LeftOut(run_id, d.path, d.digest, d.n_bytes, fetch))
    return Closure(asked, refs, objects, left_out, notes)
