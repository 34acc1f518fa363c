"""A hand-drawn SVG for a comparative claim, on the axis of the difference Delta = A - B.

From back to front: zero (dashed), the claimed difference with its rounding (blue band), the
(1 - alpha) CI that decides (thick orange bar, dot at the estimate) and, for one task, the
bootstrap CI (thin bar). The verdict is read off where the thick bar lies against zero.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..records.audit import ClaimAudit
from .plot import LEFT, RIGHT, W, _close

__all__ = ["COMPARISON_LEGEND", "comparison_svg"]

H = 140
COMPARISON_LEGEND = (
    "axis: difference A − B in metric units · dashed: zero · blue band: the claimed difference "
    "(± rounding) · thick bar: the CI that decides, dot at the estimate · thin bar: bootstrap CI"
)


def comparison_svg(c: ClaimAudit) -> str | None:
    r: dict[str, Any] | None = c.statistics.get("comparison")
    if not r or r.get("difference") is None or not r.get("difference_ci"):
        return None
    diff = float(r["difference"])
    ci = [float(v) for v in r["difference_ci"]]
    boot = r.get("bootstrap_difference") if r.get("basis") == "welch" else None
    claimed = r.get("claimed_interval")
    points = [0.0, diff, *ci]
    if boot:
        points += [float(boot["low"]), float(boot["high"])]
    if claimed:
        points += [float(v) for v in claimed]
    lo, hi = min(points), max(points)
    pad = (hi - lo) * 0.08 or 1e-6
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(c.id)}: difference of methods">',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
    ]
    if claimed:
        a, b = x(float(claimed[0])), x(float(claimed[1]))
        parts.append(
            f'<rect class="claimed" x="{a:.1f}" y="8" width="{max(b - a, 2):.1f}" height="100" '
            'fill="#2b6cb0" fill-opacity="0.35"><title>claimed difference ± rounding</title>'
            "</rect>"
        )
    parts.append(
        f'<line class="zero" x1="{x(0):.1f}" y1="8" x2="{x(0):.1f}" y2="108" stroke="#4a5568" '
        'stroke-dasharray="4 3"/>'
    )
    bars: list[tuple[list[float], int, int, str]] = [(ci, 50, 6, "decisive CI")]
    if boot:
        bars.append(([float(boot["low"]), float(boot["high"])], 80, 2, "bootstrap CI"))
    for (a_v, b_v), y, width, label in bars:
        a, b = x(a_v), x(b_v)
        parts.append(
            f'<line class="ci" x1="{a:.1f}" y1="{y}" x2="{max(b, a + 1):.1f}" y2="{y}" '
            f'stroke="#c05621" stroke-width="{width}"><title>{label} [{a_v:.4g}, {b_v:.4g}]'
            "</title></line>"
        )
        for e in (a, b):
            parts.append(
                f'<line x1="{e:.1f}" y1="{y - 7}" x2="{e:.1f}" y2="{y + 7}" stroke="#c05621" '
                'stroke-width="2"/>'
            )
    parts.append(
        f'<circle class="estimate" cx="{x(diff):.1f}" cy="50" r="6" fill="#1a202c">'
        f"<title>difference {diff:.6g}</title></circle>"
    )
    return _close(parts, lo, hi, x)
