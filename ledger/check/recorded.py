"""The stability level read from a recorded run: the ``watch/*`` series that
``ledger.torch.watch`` logged (grad norm before/after clipping, update ratio, non-finite
counts) and the loss and LR when the run logged them. No torch."""

from __future__ import annotations

import math
from typing import Any

from ..records.check import CheckItem
from ..records.metrics import MetricSeries
from ..store import Store

__all__ = ["recorded_stability"]


def _series(store: Store, run: Any) -> dict[str, MetricSeries]:
    from ..records.base import record_from_json

    out: dict[str, MetricSeries] = {}
    for m in run.metrics:
        if m.rank not in (None, 0) or m.name in out:
            continue
        rec = record_from_json(store.get_json(m.series), MetricSeries)
        out[m.name] = rec
    return out


def _points(s: MetricSeries | None) -> list[tuple[int, float]]:
    if s is None:
        return []
    return [
        (st if st is not None else i, v)
        for i, (st, v) in enumerate(zip(s.step, s.value, strict=True))
    ]


def _range(points: list[tuple[int, float]]) -> str:
    vals = [v for _, v in points if math.isfinite(v)]
    return f"{min(vals):.4g}..{max(vals):.4g}" if vals else "none finite"


def recorded_stability(store: Store, run_id: str, settings: dict[str, Any]) -> CheckItem | None:
    """The check from run ``run_id``'s watch metrics; None when it logged none."""
    from ..run.find import load_run

    _, run = load_run(store, run_id)
    series = _series(store, run)
    watch = {k: v for k, v in series.items() if k.startswith("watch/")}
    if not watch:
        return None
    max_ratio = float(settings.get("max_update_ratio", 0.1))
    loss = next((series[k] for k in ("loss", "train/loss", "watch/loss") if k in series), None)
    lr = next((series[k] for k in ("lr", "train/lr", "watch/lr") if k in series), None)
    bad: list[tuple[int, str]] = []
    for st, v in _points(loss):
        if not math.isfinite(v):
            bad.append((st, "non-finite loss"))
    for name in ("watch/nonfinite_loss", "watch/nonfinite_grads", "watch/nonfinite_params"):
        for st, v in _points(watch.get(name)):
            if v:
                bad.append((st, f"{name.removeprefix('watch/')} = {v:g}"))
    for st, v in _points(watch.get("watch/grad_norm")):
        if not math.isfinite(v):
            bad.append((st, "non-finite grad norm"))
    for st, v in _points(watch.get("watch/update_ratio")):
        if not math.isfinite(v) or v > max_ratio:
            bad.append((st, f"update ratio {v:.4g} > {max_ratio:g}"))
    first = min(bad) if bad else None
    parts = [f"run {run.run_id}: {len(_points(watch.get('watch/grad_norm')))} watched steps"]
    for label, name in (
        ("grad norm", "watch/grad_norm"),
        ("clipped", "watch/grad_norm_clipped"),
        ("update ratio", "watch/update_ratio"),
    ):
        if name in watch:
            parts.append(f"{label} {_range(_points(watch[name]))}")
    if lr is not None:
        parts.append(f"lr {_range(_points(lr))}")
    figure = ", ".join(parts)
    if first is not None:
        figure += f"; first bad step {first[0]}: {first[1]}"
    return CheckItem(
        level="stability",
        name="recorded run",
        passed=first is None,
        figure=figure,
        detail={
            "run_id": run.run_id,
            "series": sorted(watch),
            "first_bad_step": first[0] if first else None,
            "problems": [f"step {s}: {w}" for s, w in sorted(bad)[:20]],
        },
    )
