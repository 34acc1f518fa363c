"""A hand-drawn SVG per claim: the seed values, the CIs of their mean, the claimed interval.

No plotting library: the report must be one self-contained file, and the picture is simple.
Bands from back to front: the margin region that would support the claim (green), the claim
as printed (c ± r, dark), the runs (dots), the 95% and 90% CI of their mean (bars).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape
from typing import Any

from ..records.audit import ClaimAudit

__all__ = ["claim_svg"]

W, H = 640, 150
LEFT, RIGHT = 20, 20
AXIS_Y = 118


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    x = start
    while x <= hi + 1e-12 * max(1.0, abs(hi)):
        out.append(x)
        x += step
    return out


def _close(parts: list[str], lo: float, hi: float, x: Callable[[float], float]) -> str:
    """Draw the value axis from ``lo`` to ``hi`` with its ticks, and end the SVG."""
    parts.append(
        f'<line x1="{LEFT}" y1="{AXIS_Y}" x2="{W - RIGHT}" y2="{AXIS_Y}" stroke="#4a5568"/>'
    )
    for t in _ticks(lo, hi):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{AXIS_Y}" x2="{x(t):.1f}" y2="{AXIS_Y + 5}" '
            'stroke="#4a5568"/>'
        )
        parts.append(
            f'<text x="{x(t):.1f}" y="{AXIS_Y + 18}" font-size="11" '
            f'text-anchor="middle" fill="#2d3748">{t:.6g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def claim_svg(c: ClaimAudit) -> str | None:
    """SVG markup for a claim with values, or None when there is nothing to draw."""
    if c.claim is None or not c.values:
        return None
    bound: dict[str, Any] | None = c.statistics.get("bound")
    # A bound claim draws its bound as the claimed value (no rounding) and its runs' intervals.
    value = float(c.claim["value"] if bound is None else bound["bound"])
    r = float(c.statistics.get("rounding", 0.0))
    first: dict[str, Any] = next(iter(c.statistics.get("readings", {}).values()), {})
    cv: dict[str, Any] = (first.get("verdict") or {}) if bound is None else bound
    points: list[float] = [*c.values, value - r, value + r]
    support = cv.get("support_interval")
    ci90, ci95 = cv.get("ci90"), cv.get("ci95")
    for iv in (support, ci90, ci95):
        if iv:
            points += [float(iv[0]), float(iv[1])]
    lo, hi = min(points), max(points)
    pad = (hi - lo) * 0.08 or max(abs(value) * 0.01, 1e-6)
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(c.id)}: runs against claim">',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
    ]
    if support and support[0] < support[1]:
        a, b = x(float(support[0])), x(float(support[1]))
        parts.append(
            f'<rect class="support" x="{a:.1f}" y="8" width="{b - a:.1f}" height="100" '
            'fill="#c8ecd0"><title>supporting region [c+r-δ, c-r+δ]</title></rect>'
        )
    a, b = x(value - r), x(value + r)
    what = f"claimed {value:g} ± rounding {r:g}" if bound is None else f"{bound['side']} {value:g}"
    parts.append(
        f'<rect class="claimed" x="{a:.1f}" y="8" width="{max(b - a, 2):.1f}" '
        f'height="100" fill="#2b6cb0" fill-opacity="0.35"><title>{what}</title></rect>'
    )
    parts.append(
        f'<line x1="{x(value):.1f}" y1="8" x2="{x(value):.1f}" y2="108" '
        'stroke="#2b6cb0" stroke-width="2"/>'
    )
    for k, v in enumerate(c.values):
        y = 30 + (k * 37 % 41)  # deterministic jitter so equal values stay visible
        parts.append(
            f'<circle class="seed" cx="{x(v):.1f}" cy="{y}" r="5" fill="#1a202c">'
            f"<title>run value {v:.6g}</title></circle>"
        )
    for iv, y, width, colour, label in (
        (ci95, 88, 2, "#c05621", "95% CI of the mean"),
        (ci90, 98, 4, "#9c4221", "90% CI of the mean"),
    ):
        if iv:
            a, b = x(float(iv[0])), x(float(iv[1]))
            parts.append(
                f'<line class="ci" x1="{a:.1f}" y1="{y}" x2="{b:.1f}" y2="{y}" '
                f'stroke="{colour}" stroke-width="{width}"><title>{label}</title></line>'
            )
            for e in (a, b):
                parts.append(
                    f'<line x1="{e:.1f}" y1="{y - 5}" x2="{e:.1f}" y2="{y + 5}" '
                    f'stroke="{colour}" stroke-width="2"/>'
                )
    return _close(parts, lo, hi, x)
