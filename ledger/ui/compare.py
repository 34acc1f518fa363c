"""The compare page: several runs side by side, their curves overlaid, one colour each and
named "name · short id · kind" (``labels``), the config keys where they differ (then those they
share), and each main metric's last and best value per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import LedgerError
from ..index.tables import main_metrics, run_values
from ..store import Store
from .labels import replay_kinds, run_label

__all__ = ["MAX_COMPARED", "compare_page"]

# At most this many runs side by side (a static report's compare page holds every reported run).
MAX_COMPARED = 100


def _kinds_of(store: Store, recs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The kind of each run: ``original``, or its replay kind from its original's verdicts."""
    from ..run.show import describe_run

    kinds: dict[str, str] = {}
    for rid, rec in recs.items():
        original = rec.get("replay_of")
        if not original:
            kinds[rid] = "original"
            continue
        try:
            verdicts = describe_run(store, str(original)).get("verdicts", [])
        except LedgerError:
            verdicts = []
        kinds[rid] = replay_kinds(verdicts, recs).get(rid, "replay")
    return kinds


def compare_page(store: Store, run_ids: Sequence[str], warnings: list[str]) -> dict[str, Any]:
    """Everything the compare page shows about ``run_ids``, in the order given."""
    from ..index.short_ids import short_ids_of
    from .data import SAFE_ID, curves, run_record
    from .svg import PALETTE

    recs = {rid: run_record(store, rid, warnings) for rid in run_ids}
    recs = {rid: rec for rid, rec in recs.items() if rec}
    ids = list(recs)
    short = short_ids_of(store, ids)
    kinds = _kinds_of(store, recs)
    labels = {rid: run_label(recs[rid], short.get(rid, rid), kinds[rid]) for rid in ids}
    colours = {rid: PALETTE[i % len(PALETTE)] for i, rid in enumerate(ids)}
    values = {rid: run_values(store, recs[rid]) for rid in ids}
    keys = sorted({k for v in values.values() for k in v if k.startswith("params.")})
    params = []
    for k in keys:
        shown = [values[rid].get(k) for rid in ids]
        params.append(
            {
                "key": k.removeprefix("params."),
                "values": shown,
                "differs": len({repr(v) for v in shown}) > 1,
            }
        )
    params.sort(key=lambda p: not p["differs"])  # stable: differing keys first, each sorted
    metrics: dict[str, dict[str, dict[str, Any]]] = {
        rid: main_metrics(store, recs[rid]) for rid in ids
    }
    names = sorted({n for m in metrics.values() for n in m})
    summary = [{"metric": n, "cells": [metrics[rid].get(n) or {} for rid in ids]} for n in names]
    runs = [
        {
            "run_id": rid,
            "linked": bool(SAFE_ID.match(rid)),
            "short_id": short.get(rid, rid),
            "name": recs[rid].get("name") or "",
            "kind": kinds[rid],
            "label": labels[rid],
            "colour": colours[rid],
            "status": recs[rid].get("status"),
            "wall_seconds": recs[rid].get("wall_seconds"),
        }
        for rid in ids
    ]
    charts = curves(store, ids, labels=labels, colours=colours, warnings=warnings)
    return {
        "runs": runs,
        "charts": charts,
        "params": params,
        "differing": sum(p["differs"] for p in params),
        "summary": summary,
    }
