"""Line charts drawn on the server as SVG: one ``<path>`` per series, no script, no library.

Every label is escaped here (run names are user data); colours and numbers are ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape

__all__ = ["Band", "Line", "line_chart"]

W, H = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40
PALETTE = (
    "#2b6cb0",
    "#c05621",
    "#2f855a",
    "#9b2c2c",
    "#6b46c1",
    "#b7791f",
    "#2c7a7b",
    "#97266d",
    "#4a5568",
    "#276749",
)


@dataclass
class Line:
    label: str
    points: list[tuple[float, float]]
    colour: str = PALETTE[0]
    dashed: bool = False
    run_id: str = ""


@dataclass
class Band:
    """A group of runs (seeds): its mean as a line, mean ± std as a shaded band."""

    label: str
    xs: list[float]
    lo: list[float]
    hi: list[float]
    mean: list[float]
    colour: str = PALETTE[0]
    runs: list[str] = field(default_factory=list)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    out, x = [], math.ceil(lo / step) * step
    while x <= hi + 1e-9 * max(1.0, abs(hi)):
        out.append(x)
        x += step
    return out


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def line_chart(
    lines: list[Line],
    *,
    x_label: str,
    bands: list[Band] | None = None,
    marker: tuple[float, str] | None = None,
    title: str = "",
) -> Markup:
    """An SVG chart; ``marker``: (x, text) drawn as a vertical rule (a first divergence)."""
    bands = bands or []
    xs = [x for ln in lines for x, _ in ln.points] + [x for b in bands for x in b.xs]
    ys = [y for ln in lines for _, y in ln.points]
    ys += [y for b in bands for y in (*b.lo, *b.hi)]
    if marker is not None:
        xs.append(marker[0])
    if not xs or not ys:
        return Markup('<p class="empty">no finite values to draw</p>')
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - abs(y0) * 0.1 - 1e-9, y1 + abs(y1) * 0.1 + 1e-9
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)

    def py(y: float) -> float:
        return TOP + (1 - (y - y0) / (y1 - y0)) * (H - TOP - BOTTOM)

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(title)}">',
        f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
        'fill="#ffffff" stroke="#cbd5e0"/>',
    ]
    for t in _ticks(y0, y1):
        y = py(t)
        out.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#edf2f7"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#4a5568">{_fmt(t)}</text>'
        )
    for t in _ticks(x0, x1):
        x = px(t)
        out.append(
            f'<text x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" font-size="11" '
            f'fill="#4a5568">{_fmt(t)}</text>'
        )
    out.append(
        f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 6}" text-anchor="middle" font-size="12" '
        f'fill="#1a202c">{escape(x_label)}</text>'
    )
    for b in bands:
        upper = [f"{px(x):.1f},{py(v):.1f}" for x, v in zip(b.xs, b.hi, strict=True)]
        lower = [f"{px(x):.1f},{py(v):.1f}" for x, v in zip(b.xs, b.lo, strict=True)]
        out.append(
            f'<polygon class="band" points="{" ".join(upper + lower[::-1])}" '
            f'fill="{b.colour}" fill-opacity="0.18" stroke="none">'
            f"<title>{escape(b.label)}: mean ± std of {len(b.runs)} runs</title></polygon>"
        )
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(v):.1f}"
            for i, (x, v) in enumerate(zip(b.xs, b.mean, strict=True))
        )
        out.append(
            f'<path class="series mean" data-label="{escape(b.label)}" d="{d}" fill="none" '
            f'stroke="{b.colour}" stroke-width="2"><title>{escape(b.label)} (mean)</title></path>'
        )
    for ln in lines:
        if not ln.points:
            continue
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(ln.points)
        )
        dash = ' stroke-dasharray="6 4"' if ln.dashed else ""
        if len(ln.points) == 1:  # one point draws no line: a dot shows it
            ((x, y),) = ln.points
            out.append(
                f'<circle class="point" data-run="{escape(ln.run_id)}" cx="{px(x):.1f}" '
                f'cy="{py(y):.1f}" r="3.5" fill="{ln.colour}"/>'
            )
        out.append(
            f'<path class="series" data-label="{escape(ln.label)}" data-run="{escape(ln.run_id)}" '
            f'd="{d}" fill="none" stroke="{ln.colour}" stroke-width="1.8"{dash}>'
            f"<title>{escape(ln.label)}</title></path>"
        )
    if marker is not None:
        x = px(marker[0])
        out.append(
            f'<line class="divergence" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" '
            f'stroke="#e53e3e" stroke-width="1.5" stroke-dasharray="3 3"/>'
            f'<text x="{x + 4:.1f}" y="{TOP + 12}" font-size="11" fill="#c53030">'
            f"{escape(marker[1])}</text>"
        )
    out.append("</svg>")
    return Markup("".join(out))
