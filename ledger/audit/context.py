"""What every claim of one audit shares: the ledger, the recorded runs, their replays (recorded
or done now, once per run), the margin and the named methods; and the replay check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records.audit import AuditCheck, Localized, RunEvidence
from ..store import Store
from .claims import RunSelector
from .replays import NO_REPLAY, REPRODUCED, ReplayCheck, Replayer
from .select import RecordedRun

__all__ = ["AuditContext", "evidence_of"]


@dataclass
class AuditContext:
    store: Store
    runs: list[RecordedRun]
    recorded: dict[str, ReplayCheck]
    margin: float | None = None
    replayer: Replayer | None = None
    methods: dict[str, RunSelector] = field(default_factory=dict)
    _replayed: dict[str, ReplayCheck] = field(default_factory=dict)

    def replay_of(self, run_id: str) -> ReplayCheck | None:
        """The replay now (once per run) when replaying, else the latest recorded verdict."""
        if self.replayer is None:
            return self.recorded.get(run_id)
        if run_id not in self._replayed:
            self._replayed[run_id] = self.replayer(self.store, run_id)
        return self._replayed[run_id]


def _replay_check(evidence: list[RunEvidence]) -> AuditCheck:
    used = [e for e in evidence if e.used]
    bad = [e for e in used if e.replay not in (REPRODUCED, NO_REPLAY)]
    none = [e for e in used if e.replay == NO_REPLAY]
    if bad:
        shown = ", ".join(f"{e.run_id} {e.replay}" for e in bad)
        return AuditCheck(name="runs_reproducible", passed=False, detail=shown)
    if none:
        return AuditCheck(
            name="runs_reproducible",
            passed=None,
            detail=f"no replay recorded for {len(none)} of {len(used)} runs",
        )
    return AuditCheck(name="runs_reproducible", passed=True, detail=f"all {len(used)} reproduced")


def _localized(run_id: str, check: ReplayCheck) -> Localized | None:
    """Where a failed replay diverged, and which two runs' traces show it."""
    loc = check.localization
    if loc is None:
        return None
    from ..replay.localize import render_localization

    try:
        lines = render_localization(loc)
    except (KeyError, TypeError):
        return None
    traces: list[str] = []
    passes = (loc.get("resumed") or {}).get("passes")
    if loc.get("comparable"):
        if loc.get("resumed"):  # ledger replay --localize: the two traced passes
            traces = [str(p) for p in (passes or [])[:2]]
        elif check.replay_run:
            traces = [run_id, check.replay_run]
    return Localized(replay=check.replay_run, lines=lines, traces=traces)


def evidence_of(
    ctx: AuditContext,
    run_id: str,
    record: str,
    run: Any,
    *,
    value: float | None,
    step: int | None,
    used: bool,
    note: str | None,
    method: str | None = None,
    task: str | None = None,
) -> RunEvidence:
    """One run's line of evidence, with its replay (now or recorded) when its value is used."""
    check = ctx.replay_of(run_id) if used else None
    where = _localized(run_id, check) if check is not None and check.outcome != REPRODUCED else None
    return RunEvidence(
        run_id=run_id,
        record=record,
        name=run.name,
        status=run.status,
        value=value,
        step=step,
        used=used,
        note=note,
        replay=check.outcome if check else NO_REPLAY,
        replay_detail=check.describe() if check else None,
        method=method,
        task=task,
        localization=where,
    )
