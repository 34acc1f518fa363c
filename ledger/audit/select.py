"""Finding the runs behind a claim and the number each run contributes.

The value of a run is its metric's final value (``checkpoint: final``), or the metric at the
step where the selection series is best (``best-val`` / ``best-test``). Test-split selection is
also detected from run tags and the resolved config: a key ``early_stopping``,
``early_stopping_split``, ``selection_split`` or ``checkpoint_selection`` whose value is
``test`` marks a run whose test number was used to choose the checkpoint.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import LedgerError
from ..records.base import record_from_json
from ..records.metrics import MetricSeries, MetricSummary
from ..records.run import Run
from ..store import Store
from .claims import Claim, ComparisonClaim, RunSelector

__all__ = [
    "SELECTION_KEYS",
    "RecordedRun",
    "RunValue",
    "load_runs",
    "metric_names",
    "run_value",
    "select_runs",
    "selection_metric",
    "test_selection_marks",
]

SELECTION_KEYS = (
    "early_stopping",
    "early_stopping_split",
    "selection_split",
    "checkpoint_selection",
)
_SOURCE_ORDER = {"combined": 0, "api": 1, "tensorboard": 2, "stdout": 3}
_SPLIT_WORDS = {"test": ("test",), "val": ("val", "valid", "validation")}


@dataclass(frozen=True)
class RecordedRun:
    run_id: str
    oid: str
    run: Run


@dataclass(frozen=True)
class RunValue:
    value: float | None  # None: the run has no usable value (note says why)
    step: int | None
    note: str | None = None


def load_runs(store: Store, warnings: list[str] | None = None) -> list[RecordedRun]:
    """Every run record the ledger holds (refs ``runs/<id>``), oldest id first. A run whose
    ref file the log does not back is left out, and ``warnings`` says so
    (``ledger.run.find.backed_refs``)."""
    from ..run.find import backed_refs

    out = []
    for name, oid in backed_refs(store, "runs/", warnings):
        try:
            run = record_from_json(store.get_json(oid), Run)
        except LedgerError:
            continue  # unreadable records are `ledger verify`'s business, not the audit's
        out.append(RecordedRun(name.split("/", 1)[1], oid, run))
    return out


def select_runs(runs: Iterable[RecordedRun], selector: RunSelector) -> list[RecordedRun]:
    contract = selector.contract
    if contract is not None and not contract.startswith("b3:"):
        contract = "b3:" + contract
    out = []
    for r in runs:
        if selector.ids and not any(r.run_id.startswith(i) for i in selector.ids):
            continue
        name = r.run.name or ""
        if selector.names and not any(fnmatch.fnmatchcase(name, p) for p in selector.names):
            continue
        if any(r.run.tags.get(k) != v for k, v in selector.tags.items()):
            continue
        if contract is not None and not (r.run.contract_digest or "").startswith(contract):
            continue
        out.append(r)
    return out


def metric_names(run: Run) -> list[str]:
    return sorted({m.name for m in run.metrics})


def _summary(run: Run, name: str) -> MetricSummary | None:
    """One series per name: the combined/single-process one, else rank 0; api before stdout."""
    found = [m for m in run.metrics if m.name == name]
    if not found:
        return None
    return min(found, key=lambda m: (m.rank not in (None, 0), m.rank or 0, _SOURCE_ORDER[m.source]))


def _series(store: Store, summary: MetricSummary) -> MetricSeries:
    rec = record_from_json(store.get_json(summary.series), MetricSeries)
    return rec


def selection_metric(claim: Claim | ComparisonClaim, run: Run) -> str | None:
    """The series that picks the checkpoint: given, or ``metric`` with its split word swapped."""
    if claim.selection_metric is not None:
        return claim.selection_metric
    split = "val" if claim.checkpoint == "best-val" else "test"
    tokens = re.split(r"([^A-Za-z0-9]+)", claim.metric)
    words = {w for ws in _SPLIT_WORDS.values() for w in ws}
    at = [i for i, t in enumerate(tokens) if t.lower() in words]
    if not at:
        return claim.metric if split == claim.split else None
    have = set(metric_names(run))
    for word in _SPLIT_WORDS[split]:
        candidate = "".join(word if i == at[0] else t for i, t in enumerate(tokens))
        if candidate in have:
            return candidate
    return "".join(_SPLIT_WORDS[split][0] if i == at[0] else t for i, t in enumerate(tokens))


def run_value(store: Store, claim: Claim | ComparisonClaim, run: Run) -> RunValue:
    summary = _summary(run, claim.metric)
    if summary is None:
        have = ", ".join(metric_names(run)) or "none"
        return RunValue(None, None, f"no metric {claim.metric!r} (recorded: {have})")
    if claim.checkpoint == "final":
        value = summary.last
        if value is None:
            return RunValue(None, None, f"metric {claim.metric!r} has no values")
        if not math.isfinite(value):
            return RunValue(value, summary.last_step, f"final {claim.metric} is {value}")
        return RunValue(value, summary.last_step)
    sel_name = selection_metric(claim, run)
    sel = _summary(run, sel_name) if sel_name else None
    if sel is None:
        return RunValue(
            None,
            None,
            f"checkpoint {claim.checkpoint} needs a selection series; "
            f"{sel_name or 'none'!r} is not recorded (set selection_metric)",
        )
    sel_series, series = _series(store, sel), _series(store, summary)
    sign = 1.0 if claim.higher_is_better else -1.0
    best: tuple[float, int] | None = None
    for i, v in enumerate(sel_series.value):
        recorded_step = sel_series.step[i]
        step = i if recorded_step is None else recorded_step
        if math.isfinite(v) and (best is None or sign * v > sign * best[0]):
            best = (v, step)
    if best is None:
        return RunValue(None, None, f"selection series {sel_name!r} has no finite value")
    by_step = {
        (s if s is not None else i): v
        for i, (s, v) in enumerate(zip(series.step, series.value, strict=True))
    }
    value = by_step.get(best[1])
    if value is None:
        return RunValue(
            None,
            best[1],
            f"{claim.metric} has no value at step {best[1]}, where {sel_name} is best",
        )
    note = None if sel_name == claim.metric else f"step {best[1]}: best {sel_name} {best[0]:.6g}"
    return RunValue(value, best[1], note)


def test_selection_marks(store: Store, run: Run) -> list[str]:
    """Where a run says its checkpoint or early stopping was chosen on the test split."""
    marks = [f"tag {k}={v}" for k, v in run.tags.items() if k in SELECTION_KEYS and _is_test(v)]
    if run.resolved_config is not None:
        try:
            config = store.get_json(run.resolved_config)
        except LedgerError:
            config = None
        marks.extend(f"config {path}=test" for path in _config_marks(config, ""))
    return marks


def _is_test(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "test"


def _config_marks(value: Any, path: str, depth: int = 0) -> list[str]:
    if depth > 8:
        return []
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if k in SELECTION_KEYS and _is_test(v):
                out.append(sub)
            else:
                out.extend(_config_marks(v, sub, depth + 1))
    elif isinstance(value, list):
        for i, v in enumerate(value[:1000]):
            out.extend(_config_marks(v, f"{path}[{i}]", depth + 1))
    return out
