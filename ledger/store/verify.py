"""``ledger verify``: re-hash every object, resolve every ref and link, check the log chain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import IntegrityError, LedgerError
from .anchor import chain_head, extends
from .repo import Store
from .staging import scan_staging
from .walk import reachable

__all__ = ["Problem", "VerifyReport", "ref_mismatches", "verify_store"]


@dataclass(frozen=True)
class Problem:
    # corrupt-object | missing-object | bad-ref | ref-mismatch | log-chain | transition | head |
    # abandoned-staging | unreplayable (ledger.replay.material) | log-record, index
    # (ledger.index.consistency) | ...
    kind: str
    subject: str
    message: str


@dataclass
class VerifyReport:
    objects: int = 0
    refs: int = 0
    log_entries: int = 0
    head: str | None = None  # the chain head: id of the last log line (ledger.store.anchor)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth knowing, not a problem

    @property
    def ok(self) -> bool:
        return not self.problems


def ref_mismatches(store: Store, expected: dict[str, str], refs: dict[str, str]) -> list[Problem]:
    """Each ref file that differs from the fold of the log (``expected``), saying which
    ``ledger reindex`` can repair (``Store.repair_refs``: the log is the commit point)."""
    out: list[Problem] = []
    for name in sorted(set(expected) | set(refs)):
        want, have = expected.get(name), refs.get(name)
        if want == have:
            continue
        if want is None:
            why = (
                "no accepted log line leaves it there: written behind the log's back, or by a "
                "refused line; it is not repaired (remove the file once you know what it is)"
            )
        elif not store.objects.has(want):
            why = "changed behind the log's back or a crash mid-update; the log's object is missing"
        else:
            why = "a crash mid-update or changed behind the log's back; `ledger reindex` repairs it"
        said = f"ref {name} holds {have or 'nothing'} but the log says {want or 'deleted'}"
        out.append(Problem("ref-mismatch", name, f"{said} ({why})"))
    return out


def verify_store(
    store: Store, progress: Callable[[int], None] | None = None, *, head: str | None = None
) -> VerifyReport:
    """Every check of the store layer; with ``head``, also that the log still extends it."""
    report = VerifyReport()
    for oid in store.objects:
        report.objects += 1
        try:
            store.objects.verify(oid)
        except IntegrityError as e:
            report.problems.append(Problem("corrupt-object", oid, e.message))
        if progress is not None:
            progress(report.objects)

    refs: dict[str, str] = {}
    for name, _text in store.refs.iter():
        report.refs += 1
        try:
            got = store.refs.get(name)
        except LedgerError as e:
            report.problems.append(Problem("bad-ref", name, e.message))
            continue
        if got is None:
            continue
        oid = refs[name] = got
        if not store.objects.has(oid):
            report.problems.append(
                Problem("missing-object", oid, f"ref {name} points at {oid}, which is missing")
            )

    def missing(oid: str, parent: str | None) -> None:
        if parent is not None:
            report.problems.append(
                Problem("missing-object", oid, f"record {parent} links to {oid}, which is missing")
            )

    reachable(store.objects, refs.values(), on_missing=missing)

    chain_problems, _ = store.log.check()
    for p in chain_problems:
        where = "end of log" if p.line < 0 else f"log line {p.line}"
        report.problems.append(Problem("log-chain", where, p.message))
    report.head, report.log_entries = chain_head(store.log)
    if head is not None:
        anchored = extends(store.log, head)
        if not anchored.ok:
            report.problems.append(Problem("head", head, anchored.message))

    fold = store.fold()
    for r in fold.refused:
        where = f"log line {r.line}"
        report.problems.append(Problem("transition", where, f"{where}: {r.message}"))
    report.problems += ref_mismatches(store, fold.values(), refs)
    for s in scan_staging(store.root / "staging"):
        if not s.live:
            report.problems.append(
                Problem(
                    "abandoned-staging",
                    f"staging/{s.run_id}",
                    f"staging/{s.run_id} was left by a recorder (or an import or pull) that "
                    f"is gone ({s.size} bytes); "
                    "`ledger gc --yes` removes it once it is older than the grace period",
                )
            )
    return report
