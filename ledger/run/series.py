"""Metric series of a run as ``{(metric, step): value}`` maps for ``ledger.stats``."""

from __future__ import annotations

from ..records.base import record_from_json
from ..records.metrics import MetricSeries
from ..records.run import Run
from ..store import Store

__all__ = ["final_value", "run_series"]


def _label(name: str, source: str, rank: int | None) -> str:
    label = name if source in ("stdout", "api", "combined") else f"{source}:{name}"
    return label if rank is None else f"{label}@rank{rank}"


def run_series(store: Store, run: Run) -> dict[tuple[str, int], float]:
    """Every metric point keyed by (label, step). Points without a step use their position;
    several points at one step (a metric logged twice per step) keep the last."""
    out: dict[tuple[str, int], float] = {}
    for summary in run.metrics:
        series = record_from_json(store.get_json(summary.series), MetricSeries)
        label = _label(series.name, series.source, series.rank)
        for i, value in enumerate(series.value):
            step = series.step[i]
            out[(label, i if step is None else step)] = value
    return out


def final_value(run: Run, metric: str) -> float | None:
    """The last finite value of ``metric`` (any source; 'combined' preferred over ranks)."""
    best = None
    for m in run.metrics:
        if m.name != metric or (m.rank is not None and m.source != "combined"):
            continue
        if best is None or m.source == "combined":
            best = m
    return None if best is None else best.last_finite
