"""Sizes and durations as people read them: ``54.6 MiB``, ``0.11 s``, ``4 min 05 s``.

Records keep exact numbers (bytes, seconds); only what is printed for reading goes through here.
"""

from __future__ import annotations

__all__ = ["human_bytes", "human_seconds", "one_line"]


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


def one_line(text: str) -> str:
    """User text shown on one line of a table or a ``key  value`` row (a run name, a tag):
    newlines, tabs and other control characters written as ``\\xNN`` escapes, so an odd name can
    neither fake a row nor drive the reader's terminal."""
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c for c in text
    )
