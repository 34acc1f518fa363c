"""``audit()``: judge every claim of a claims file and store the result in the ledger.

Objects first (the claims file's bytes, then the audit record), the ref ``audits/<id>`` last,
so a crash leaves at most unreferenced objects.
"""

from __future__ import annotations

import math
import secrets
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..records.audit import Audit, ClaimAudit
from ..store import Store
from .evaluate import AuditContext, evaluate_claim
from .load import load_claims
from .replays import Replayer, recorded_replays
from .select import load_runs

__all__ = ["AuditResult", "audit", "exit_code_for", "load_audit", "new_audit_id"]


@dataclass(frozen=True)
class AuditResult:
    id: str
    oid: str  # the stored Audit record
    record: Audit
    # Runs and verdicts left out because the log does not back their ref files.
    warnings: tuple[str, ...] = ()

    @property
    def claims(self) -> list[ClaimAudit]:
        return self.record.claims

    @property
    def exit_code(self) -> int:
        return self.record.exit_code

    @property
    def ok(self) -> bool:
        return self.record.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "oid": self.oid, "record": self.record.to_json()}


def new_audit_id(now: datetime | None = None) -> str:
    """Sorts by time, unique by the random tail (same shape as run ids)."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(4)


def exit_code_for(claims: list[ClaimAudit]) -> int:
    """2 if the claims file has mistakes, else 0 only when every claim is supported."""
    if any(c.problems for c in claims):
        return 2
    return 0 if claims and all(c.verdict == "supported" for c in claims) else 1


def audit(
    store: Store,
    claims_path: str | Path,
    *,
    replay: bool = False,
    margin: float | None = None,
    replayer: Replayer | None = None,
) -> AuditResult:
    """Check every claim in ``claims_path`` against the runs recorded in ``store``.

    ``margin`` (metric units) applies to claims that set none. With ``replay=True`` every run
    behind a claim is replayed through ``replayer`` (the CLI passes ledger's replay engine);
    otherwise each run's latest recorded replay verdict is reported.
    """
    if margin is not None and not (math.isfinite(margin) and margin > 0):
        raise UsageError(f"margin must be a positive number (finite), got {margin!r}")
    if replay and replayer is None:
        raise UsageError(
            "replaying runs during an audit needs a replayer",
            hint="call audit(..., replay=True, replayer=...) or run `ledger replay` first",
        )
    loaded = load_claims(claims_path)
    left_out: list[str] = []
    ctx = AuditContext(
        store=store,
        runs=load_runs(store, left_out),
        recorded=recorded_replays(store, left_out),
        margin=margin,
        replayer=replayer if replay else None,
        methods=loaded.methods,
    )
    results = _flag_retracted(store, [evaluate_claim(c, ctx) for c in loaded.claims], left_out)
    from .._version import __version__

    audit_id = new_audit_id()
    file_oid = store.objects.put_bytes(loaded.raw)
    record = Audit(
        audit_id=audit_id,
        created=datetime.now(UTC),
        claims_path=str(claims_path),
        claims_file=file_oid,
        settings={"margin": margin, "replay": replay},
        claims=results,
        counts=dict(sorted(Counter(c.verdict for c in results).items())),
        exit_code=exit_code_for(results),
        ledger_version=__version__,
    )
    oid = store.put_json(record.to_json())
    store.set_ref(f"audits/{audit_id}", oid, op="audit", exit_code=record.exit_code)
    return AuditResult(audit_id, oid, record, tuple(left_out))


def _flag_retracted(
    store: Store, results: list[ClaimAudit], warnings: list[str]
) -> list[ClaimAudit]:
    """A claim whose evidence includes a retracted run (``ledger retract``) says so in its
    reasons, and the audit warns; the verdict is the numbers', as before."""
    from ..run.curate import retracted_runs

    retracted = retracted_runs(store, warnings)
    out = []
    for c in results:
        hit = [e for e in c.runs if e.run_id in retracted]
        if not hit:
            out.append(c)
            continue
        lines = [
            f"uses retracted run {e.run_id}{'' if e.used else ' (matched, not used)'}: "
            f"{retracted[e.run_id].get('reason')}"
            for e in hit
        ]
        warnings.extend(f"claim {c.id!r} {line}" for line in lines)
        out.append(c.model_copy(update={"reasons": [*c.reasons, *lines]}))
    return out


def load_audit(store: Store, audit_id: str) -> AuditResult:
    """A stored audit by id or unique id prefix."""
    from ..records.base import record_from_json
    from ..run.find import backed_ref

    ids = sorted(name.split("/", 1)[1] for name in store.refs.names("audits/"))
    matches = [audit_id] if audit_id in ids else [i for i in ids if i.startswith(audit_id)]
    if len(matches) != 1:
        what = "no audit" if not matches else f"{len(matches)} audits match"
        raise UsageError(f"{what} {audit_id!r}", hint="give a full audit id")
    oid = backed_ref(store, f"audits/{matches[0]}")
    if oid is None:  # removed meanwhile
        raise UsageError(f"no audit {audit_id!r}", hint="give a full audit id")
    record = record_from_json(store.get_json(oid), Audit)
    return AuditResult(matches[0], oid, record)
