"""Warnings that never stop training: once per kind, to stderr, and kept as run notes.

Not ``warnings.warn``: a script run with ``-W error`` (or pytest's filterwarnings) would turn a
ledger problem into a crashed training run, which is the one thing the runtime must never cause.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

__all__ = ["reset_warnings", "set_note_sink", "warn_once"]

_lock = threading.Lock()
_seen: set[str] = set()
_note_sink: Callable[[str], None] | None = None


def set_note_sink(sink: Callable[[str], None] | None) -> None:
    """Where every warning message also goes (the current run's notes)."""
    global _note_sink
    _note_sink = sink


def warn_once(kind: str, message: str) -> None:
    """Print ``message`` the first time ``kind`` is seen; record it as a note every time."""
    with _lock:
        first = kind not in _seen
        _seen.add(kind)
    if first:
        try:
            sys.stderr.write(f"ledger: warning: {message}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    sink = _note_sink
    if sink is not None:
        sink(f"{kind}: {message}")


def reset_warnings() -> None:
    """Forget which kinds were printed (tests, and a forked child starting afresh)."""
    with _lock:
        _seen.clear()
