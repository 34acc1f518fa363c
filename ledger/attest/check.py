"""``ledger attest`` and ``ledger verify-attestation``: sign a Statement, check one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_json
from .._hashing import OID_RE
from .._parse import MAX_RECORD_DEPTH, load_json, read_bounded
from ..errors import IntegrityError, LedgerError, UsageError
from ..run.find import resolve_run
from ..store import Store
from ..store.anchor import chain_head, extends, parse_head, refs_at
from ..store.walk import reachable
from .dsse import open_envelope, parse_payload, sign_envelope
from .keys import key_id
from .statement import PREDICATE_TYPE, STATEMENT_TYPE, build_statement, object_ids

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = ["AttestationReport", "attest_run", "read_envelope", "verify_attestation"]

MAX_ENVELOPE = 64 * 2**20  # an envelope signs a statement of object ids: kilobytes


def attest_run(
    store: Store, text: str, key: Ed25519PrivateKey
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(signed DSSE envelope, the Statement in it) about the run ``text`` names, at the
    current chain head."""
    problems, _ = store.log.check()
    if problems:
        raise IntegrityError(
            f"the log chain is broken ({problems[0].message}); not attesting",
            hint="run `ledger verify` and restore the ledger from a copy you trust",
        )
    head, length = chain_head(store.log)
    if head is None:
        raise UsageError("the ledger has no history to attest")
    refs = refs_at(store.log, head)
    if refs is None:  # the log changed between the two reads
        raise IntegrityError(f"the ledger's log has no line {head}", hint="run it again")
    statement = build_statement(store, resolve_run(store, text), refs, head, length)
    return sign_envelope(canonical_json(statement), key), statement


@dataclass
class AttestationReport:
    statement: dict[str, Any] | None = None
    keyid: str = ""
    objects_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.statement is not None and not self.problems


def _diff(want: Any, have: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as dotted paths."""
    if isinstance(want, dict) and isinstance(have, dict):
        out: list[str] = []
        for k in sorted(set(want) | set(have)):
            out += _diff(want.get(k), have.get(k), f"{path}.{k}" if path else str(k))
        return out
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        return [
            d
            for i, (w, h) in enumerate(zip(want, have, strict=True))
            for d in _diff(w, h, f"{path}[{i}]")
        ]
    return [] if want == have else [path or "(whole statement)"]


def read_envelope(path: Path) -> Any:
    try:
        return load_json(
            read_bounded(path, MAX_ENVELOPE).decode("utf-8"), max_depth=MAX_RECORD_DEPTH
        )
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(
            f"{path} is not JSON ({e})", hint="give the file `ledger attest` wrote"
        ) from None


def verify_attestation(store: Store, envelope: Any, key: Ed25519PublicKey) -> AttestationReport:
    """Signature, then the chain head it names is in this ledger's log, then the Statement is
    what the records at that head say, then every object it names exists and hashes right."""
    report = AttestationReport(keyid=key_id(key))
    payload = open_envelope(envelope, key)
    if payload is None:
        report.problems.append(
            f"no signature verifies with key {report.keyid}: the attestation was changed, "
            "or signed with another key"
        )
        return report
    statement = parse_payload(payload)
    report.statement = statement
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != PREDICATE_TYPE:
        report.problems.append(
            f"not a ledger run attestation (_type {statement.get('_type')!r}, "
            f"predicateType {statement.get('predicateType')!r})"
        )
        return report
    try:
        params = statement["predicate"]["buildDefinition"]["internalParameters"]
        run_id = statement["predicate"]["runDetails"]["metadata"]["invocationId"]
        head = parse_head(str(params["chainHead"]))
        names = object_ids(statement)
    except (KeyError, TypeError, UsageError) as e:
        report.problems.append(f"the Statement lacks a field ledger writes ({e})")
        return report
    if params.get("ledgerId") != store.id:
        report.problems.append(
            f"the attestation is about ledger {params.get('ledgerId')}, this is {store.id}"
        )
    anchored = extends(store.log, head)
    if not anchored.ok:
        report.problems.append(anchored.message)
    else:
        refs = refs_at(store.log, head)
        if refs is None:  # the log changed between the two reads
            raise IntegrityError(f"the ledger's log has no line {head}", hint="run it again")
        try:
            length = (anchored.seq or 0) + 1
            rebuilt = build_statement(store, run_id, refs, head, length)
        except LedgerError as e:
            report.problems.append(f"the ledger cannot rebuild the Statement: {e.message}")
        else:
            for where in _diff(rebuilt, statement):
                report.problems.append(
                    f"the Statement says something else than the records at its head: {where}"
                )

    def missing(oid: str, parent: str | None) -> None:
        via = "" if parent is None else f" (linked from {parent})"
        report.problems.append(f"object {oid}{via} is missing")

    bad = [n for n in names if not (isinstance(n, str) and OID_RE.match(n))]
    report.problems += [f"{n!r} is not an object id" for n in bad]
    names = [n for n in names if n not in bad]
    for oid in sorted(reachable(store.objects, names, on_missing=missing)):
        try:
            store.objects.verify(oid)
        except IntegrityError as e:
            report.problems.append(e.message)
        report.objects_checked += 1
    return report
