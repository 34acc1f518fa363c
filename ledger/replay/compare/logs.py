"""Captured logs (stdout, stderr, ``*.log``): line by line, exactly, and only when asked.

Logs carry timestamps, progress bars and host names, so by default a replay's verdict ignores
them (``include_logs``); when included, the first differing line is reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...records.verdict_parts import CompareSettings, Difference, FileComparison
from ._common import ValueTally, short_repr

__all__ = ["compare_log_files", "is_log_file"]

_LOG_NAME = re.compile(r"(stdout|stderr)(\.(txt|log))?|.*\.log", re.IGNORECASE)


def is_log_file(name: str) -> bool:
    return bool(_LOG_NAME.fullmatch(name.rsplit("/", 1)[-1]))


def _lines(path: Path) -> list[str]:
    # backslashreplace, not replace: two different invalid bytes must not read as one U+FFFD
    return path.read_bytes().decode("utf-8", errors="backslashreplace").splitlines()


def compare_log_files(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    a, b = _lines(original), _lines(replay)
    tally = ValueTally(settings, unit="lines")
    for i in range(max(len(a), len(b))):
        tally.total += 1
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x == y:
            continue
        if x is not None and y is not None and tally.paths.same(x, y):
            tally.mapped += 1  # a path under the working tree, printed by both
            continue
        tally.mismatches += 1
        if x is None or y is None:
            side = "replay" if x is None else "original"
            text = f"line {i + 1} is only in the {side}"
        else:
            text = f"line {i + 1} differs"
        tally.difference(
            Difference(
                kind="structure" if x is None or y is None else "content",
                description=text,
                line=i + 1,
                original=None if x is None else short_repr(x),
                replay=None if y is None else short_repr(y),
            )
        )
    return tally.result(original.name, "logs")
