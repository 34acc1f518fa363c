"""The stored result of ``ledger audit``: each claim's verdict and the evidence behind it.

The claims file itself is stored as a raw object (``claims_file``, its BLAKE3 id doubles as the
file's digest), so an audit can always be re-read against exactly the text it judged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import JsonFloat, Oid, Record, Timestamp

__all__ = [
    "Audit",
    "AuditCheck",
    "ClaimAudit",
    "ClaimProblem",
    "ClaimVerdictName",
    "Localized",
    "RunEvidence",
]

# "error": the claim could not be judged at all (malformed claim, unknown metric, no runs).
# "contradicted" and "insufficient" are verdicts of comparative claims (A beats B).
ClaimVerdictName = Literal[
    "supported",
    "not_supported",
    "contradicted",
    "inconclusive",
    "insufficient",
    "not_reproducible",
    "error",
]


class ClaimProblem(BaseModel):
    """A mistake in the claims file, located so the author can fix it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    line: int | None  # 1-based, in the claims file
    column: int | None = None
    field: str  # dotted path inside the claim, "" for the claim as a whole
    message: str


class AuditCheck(BaseModel):
    """One consistency check; ``passed`` is None when it could not be carried out."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str
    passed: bool | None
    detail: str


class Localized(BaseModel):
    """Where a run's failed replay diverged, as ``ledger.replay.localize`` reported it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    replay: str | None  # the replay's run id
    lines: list[str]  # the chain, then what to do (``localized: …``, ``next: …``)
    # The two runs whose traces were compared: the run and its replay, or the two passes of
    # ``ledger replay --localize`` for a run recorded without a trace; empty when none were.
    traces: list[str] = Field(default_factory=list)


class RunEvidence(BaseModel):
    """One run the selector matched, the value taken from it and whether it was used."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    run_id: str
    record: Oid
    name: str | None = None
    status: str
    value: JsonFloat | None = None
    step: int | None = None
    used: bool
    note: str | None = None
    replay: str  # outcome of the run's own replay, or "no replay recorded"
    replay_detail: str | None = None
    method: str | None = None  # comparative claims: the method the run stands for
    task: str | None = None  # multi-task comparative claims: the run's task
    # Where a replay that failed diverged from the run; absent when it reproduced or was not
    # localized.
    localization: Localized | None = Field(default=None, exclude_if=lambda v: v is None)


class ClaimAudit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    index: int  # 0-based position in the claims file
    id: str
    line: int | None
    source: dict[str, str] = Field(default_factory=dict)  # paper, table, row
    claim: dict[str, Any] | None = None  # the validated claim; None if it did not validate
    verdict: ClaimVerdictName
    exceeds: bool = False  # not supported because the runs lie above the claim
    reasons: list[str] = Field(default_factory=list)
    problems: list[ClaimProblem] = Field(default_factory=list)
    runs: list[RunEvidence] = Field(default_factory=list)
    values: list[float] = Field(default_factory=list)  # the values the statistics used
    checks: list[AuditCheck] = Field(default_factory=list)
    statistics: dict[str, Any] = Field(default_factory=dict)  # ledger.stats results as JSON
    varied_sources: list[str] = Field(default_factory=list)
    seeds_needed: int | None = None
    margin: float | None = None
    margin_source: str | None = None


class Audit(Record):
    KIND = "audit"
    SCHEMA = 1

    kind: Literal["audit"] = "audit"
    audit_id: str
    created: Timestamp
    claims_path: str  # as given; the bytes are in claims_file
    claims_file: Oid  # the raw claims file; its id is the file's BLAKE3 digest
    settings: dict[str, Any] = Field(default_factory=dict)  # margin, replay
    claims: list[ClaimAudit]
    counts: dict[str, int] = Field(default_factory=dict)  # verdict -> number of claims
    exit_code: int  # 0 all supported, 1 otherwise, 2 the claims file has mistakes
    ledger_version: str
