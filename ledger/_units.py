"""Sizes and durations as people read them: ``54.6 MiB``, ``0.11 s``, ``4 min 05 s``.

Records keep exact numbers (bytes, seconds); only what is printed for reading goes through here.
"""

from __future__ import annotations

import re

__all__ = [
    "CELL_MAX",
    "LINE_MAX",
    "escape_controls",
    "human_bytes",
    "human_seconds",
    "one_line",
]


def human_bytes(n: float | None) -> str:
    """Binary units with one decimal; whole bytes below 1 KiB; ``?`` when unknown."""
    if n is None or isinstance(n, bool) or not isinstance(n, int | float):
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def human_seconds(s: float | None) -> str:
    """Two significant digits under 10 s, whole seconds up to a minute, then min/h."""
    if s is None or isinstance(s, bool) or not isinstance(s, int | float):
        return "?"
    if s < 10:
        return f"{s:.2f} s" if s < 1 else f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    m, sec = divmod(round(s), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


# Control characters: C0, DEL and C1 (\x9b is an 8-bit CSI on some terminals). Multi-line text
# keeps its newlines and tabs; a value shown on one line escapes them too.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CONTROLS_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}"


def escape_controls(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with each control character written as its ``\\xNN`` escape (newlines and tabs
    kept with ``keep_lines``)."""
    return (CONTROLS_BUT_LINES if keep_lines else CONTROLS).sub(_escape, text)


# Characters of user text a table cell shows, and a line of detail (``show``, ``audit``,
# ``diff``). Longer text is cut: a 64 KiB run name drawn in full padded every row of ``ls`` to
# 64 Ki blanks. What was stored is untouched and ``--json`` prints it whole.
CELL_MAX = 200
LINE_MAX = 2000


def one_line(text: str, limit: int = CELL_MAX) -> str:
    """User text (a run name, a tag, a claim, a config value) as one table cell or one line of a
    terminal: the one way every table and line the CLI prints turns user text into a cell.
    Control characters are escaped, newlines and tabs too, so an odd name can neither fake a
    row nor drive the reader's terminal; at most ``limit`` characters of the text are shown,
    and longer text ends in ``…`` and how much there was: ``nnnn… [65,536 chars]``."""
    if len(text) <= limit:
        return escape_controls(text)
    return f"{escape_controls(text[:limit])}… [{len(text):,} chars]"
