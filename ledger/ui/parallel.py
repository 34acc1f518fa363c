"""Parallel coordinates: each run a line across one axis per config key that varies, ending on
the axis of a chosen metric, coloured by that metric, so which settings go with good values
shows at a glance. Drawn on the server as SVG, like the curves (``svg.py``); every label is
escaped here.

Numeric keys get a linear axis from their smallest to their largest value; other values
(strings, booleans, lists) are placed evenly in sorted order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

from ..index.tables import main_metrics, run_values
from ..store import Store

__all__ = ["MAX_AXES", "parallel_page"]

MAX_AXES = 12
W, H = 1040, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 90, 48, 36
LOW, HIGH = (43, 108, 176), (221, 107, 32)  # the metric's low and high ends: blue, orange


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v == v


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        return f"{v:.4g}"
    return json.dumps(v, sort_keys=True)


class _Axis:
    """Where a value sits on one axis, 0 (bottom) .. 1 (top)."""

    def __init__(self, name: str, values: list[Any]) -> None:
        self.name = name
        present = [v for v in values if v is not None]
        self.numeric = bool(present) and all(_is_number(v) for v in present)
        if self.numeric:
            self.lo, self.hi = min(present), max(present)
            self.ticks = [(0.0, _text(self.lo)), (1.0, _text(self.hi))]
            if self.hi == self.lo:
                self.ticks = [(0.5, _text(self.lo))]
        else:
            self.levels = sorted({_text(v) for v in present})
            n = len(self.levels)
            self.ticks = [(self._level(t), t) for t in self.levels]
            self.n = n

    def _level(self, text: str) -> float:
        i = self.levels.index(text)
        return 0.5 if len(self.levels) == 1 else i / (len(self.levels) - 1)

    def at(self, v: Any) -> float | None:
        if v is None:
            return None
        if self.numeric:
            return 0.5 if self.hi == self.lo else (float(v) - self.lo) / (self.hi - self.lo)
        return self._level(_text(v))


def _colour(t: float) -> str:
    r, g, b = (round(lo + (hi - lo) * t) for lo, hi in zip(LOW, HIGH, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _figure(metric: str, runs: list[dict[str, Any]], keys: list[str]) -> Markup:
    shown = [r for r in runs if _is_number(r["metrics"].get(metric))]
    if not shown:
        return Markup(f'<p class="empty">no run has a finite value of {escape(metric)}</p>')
    axes = [_Axis(k, [r["params"].get(k) for r in shown]) for k in keys]
    axes.append(_Axis(metric, [r["metrics"][metric] for r in shown]))
    gap = (W - LEFT - RIGHT) / max(1, len(axes) - 1)

    def px(i: int) -> float:
        return LEFT + i * gap if len(axes) > 1 else W / 2

    def py(t: float) -> float:
        return TOP + (1 - t) * (H - TOP - BOTTOM)

    out = [
        f'<svg class="parallel" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(metric)} against the config">',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
    ]
    metric_axis = axes[-1]
    for r in shown:
        t = metric_axis.at(r["metrics"][metric]) or 0.0
        points = [
            f"{px(i):.1f},{py(at):.1f}"
            for i, ax in enumerate(axes)
            if (
                at := ax.at(
                    r["params"].get(ax.name) if ax is not metric_axis else r["metrics"][metric]
                )
            )
            is not None
        ]
        out.append(
            f'<polyline class="run-line" data-run="{escape(r["run_id"])}" '
            f'points="{" ".join(points)}" fill="none" stroke="{_colour(t)}" stroke-width="2" '
            f'stroke-opacity="0.85"><title>{escape(r["label"])}: {escape(metric)} = '
            f"{escape(_text(r['metrics'][metric]))}</title></polyline>"
        )
    for i, ax in enumerate(axes):
        x = px(i)
        cls = "axis metric-axis" if ax is metric_axis else "axis"
        out.append(
            f'<g class="{cls}" data-axis="{escape(ax.name)}">'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#2d3748" '
            f'stroke-width="1.2"/><text x="{x:.1f}" y="{TOP - 22}" text-anchor="middle" '
            f'font-size="12" font-weight="600" fill="#1a202c">{escape(ax.name)}</text>'
        )
        for t, label in ax.ticks:
            out.append(
                f'<text x="{x + 5:.1f}" y="{py(t) + 4:.1f}" font-size="11" fill="#4a5568">'
                f"{escape(label[:24])}</text>"
            )
        out.append("</g>")
    out.append("</svg>")
    return Markup("".join(out))


def parallel_page(store: Store, run_ids: Sequence[str], warnings: list[str]) -> dict[str, Any]:
    """One figure per main metric over ``run_ids``: the config keys that vary between them
    (at most ``MAX_AXES``) as axes, then the metric's last value."""
    from ..index.short_ids import short_ids_of
    from .data import run_record
    from .labels import run_label

    recs = {rid: run_record(store, rid, warnings) for rid in run_ids}
    recs = {rid: rec for rid, rec in recs.items() if rec}
    short = short_ids_of(store, list(recs))
    runs: list[dict[str, Any]] = []
    for rid, rec in recs.items():
        values = run_values(store, rec)
        runs.append(
            {
                "run_id": rid,
                "label": run_label(rec, short.get(rid, rid), ""),
                "params": {
                    k.removeprefix("params."): v
                    for k, v in values.items()
                    if k.startswith("params.")
                },
                "metrics": {n: m.get("last") for n, m in main_metrics(store, rec).items()},
            }
        )
    seen: dict[str, set[str]] = {}
    for r in runs:
        for k, v in r["params"].items():
            seen.setdefault(k, set()).add(_text(v))
    keys = sorted(k for k, vs in seen.items() if len(vs) > 1 or len(runs) == 1)[:MAX_AXES]
    metrics = sorted({n for r in runs for n in r["metrics"]})
    return {
        "keys": keys,
        "runs": runs,
        "figures": [{"metric": m, "svg": _figure(m, runs, keys)} for m in metrics],
    }
