"""Audit test helper: real run records in a real store, built without the recorder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.records.metrics import build_series, summarize
from ledger.records.run import Run
from ledger.store import Store

Points = Sequence[tuple[int, float]]


@dataclass
class Lab:
    """A ledger with runs in it, and a place to write claims files."""

    store: Store
    dir: Path

    def add(
        self,
        run_id: str,
        metrics: dict[str, Points],
        *,
        name: str | None = None,
        tags: dict[str, str] | None = None,
        status: str = "succeeded",
        replay_of: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> str:
        """Store metric series and a Run record, and point ``runs/<run_id>`` at it."""
        store = self.store
        contract = store.put_json({"kind": "contract-stub", "schema": 1, "name": name})
        summaries = []
        for metric, points in metrics.items():
            series = build_series(metric, "api", [(s, None, float(s), v) for s, v in points])
            summaries.append(summarize(series, store.put_json(series.to_json())))
        run = Run.model_validate(
            {
                "run_id": run_id,
                "name": name,
                "tags": tags or {},
                "status": status,
                "exit_code": 0 if status == "succeeded" else 1,
                "started": datetime(2026, 11, 30, 6, 0, tzinfo=UTC),
                "host": "test-host",
                "pid": 1,
                "contract": contract,
                "contract_digest": contract,
                "resolved_config": store.put_json(config) if config is not None else None,
                "metrics": summaries,
                "replay_of": replay_of,
                "ledger_version": "0.1.0",
            }
        )
        oid = store.put_json(run.to_json())
        store.set_ref(f"runs/{run_id}", oid, op="seal", status=run.status)
        return oid

    def seeds(
        self, prefix: str, finals: Sequence[float], *, metric: str = "test/acc", **kw: Any
    ) -> list[str]:
        """One run per final value (named ``prefix``); the metric climbs to it over 3 steps."""
        ids = []
        for i, v in enumerate(finals):
            run_id = f"{prefix}-{i:02d}"
            kw.setdefault("name", prefix)
            self.add(run_id, {metric: [(0, v - 2.0), (1, v - 0.5), (2, v)]}, **kw)
            ids.append(run_id)
        return ids

    def claims(self, text: str, name: str = "claims.yaml") -> Path:
        path = self.dir / name
        path.write_text(text, encoding="utf-8")
        return path
