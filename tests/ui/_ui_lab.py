"""UI and index test helper: real run, config, series and verdict records in a real store,
logged with the verbs the recorder uses (so ``ledger verify`` holds), built without recording."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger.records.config import ConfigCapture
from ledger.records.metrics import build_series, summarize
from ledger.records.run import Run
from ledger.store import Store

Points = Sequence[tuple[int, float]]
T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def add_run(
    store: Store,
    run_id: str,
    metrics: dict[str, Points] | None = None,
    *,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    status: str = "succeeded",
    replay_of: str | None = None,
    config: dict[str, Any] | None = None,
    checkpoints: Sequence[dict[str, Any]] = (),
    stdout: str | None = None,
    minute: int = 0,
    op: str = "seal",
) -> str:
    """Store a run's series, config and record; log its seal (or ``op``: ``start``) like the
    recorder does."""
    contract = store.put_json({"kind": "contract-stub", "schema": 1, "name": name})
    summaries = []
    for metric, points in (metrics or {}).items():
        series = build_series(metric, "api", [(s, s * 32, float(s), v) for s, v in points])
        summaries.append(summarize(series, store.put_json(series.to_json())))
    resolved = None
    if config is not None:
        resolved = store.put_json(
            ConfigCapture(argv=["python", "train.py"], resolved=config).to_json()
        )
    started = T0 + timedelta(minutes=minute)
    run = Run.model_validate(
        {
            "run_id": run_id,
            "name": name,
            "tags": tags or {},
            "status": status,
            "exit_code": 0 if status == "succeeded" else 1,
            "started": started,
            "ended": started + timedelta(seconds=90),
            "wall_seconds": 90.0,
            "host": "test-host",
            "pid": 1,
            "contract": contract,
            "contract_digest": contract,
            "resolved_config": resolved,
            "stdout": store.objects.put_bytes(stdout.encode()) if stdout is not None else None,
            "metrics": summaries,
            "replay_of": replay_of,
            "checkpoints": list(checkpoints),
            "ledger_version": "0.1.0",
        }
    )
    oid = store.put_json(run.to_json())
    store.set_ref(f"runs/{run_id}", oid, op=op, **({"status": status} if op == "seal" else {}))
    return oid
