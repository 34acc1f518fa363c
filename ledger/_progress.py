"""Progress of long library work, for whoever listens (the CLI draws it on a terminal).

The library marks a stretch of work with ``stage("digesting inputs")`` and counts what it does
with ``tick(files, nbytes)``; nothing is printed here. Without a listener (the library used from
Python, the CLI on a pipe) both cost next to nothing. A stage opened while another is open draws
nothing. Stages cover only work done while no recorded command runs (before its launch, after its
exit), so a bar never interleaves with the command's own output; the CLI does not listen where
commands run alongside each other (``replay --jobs`` above 1).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

__all__ = ["Listener", "Tick", "listen", "stage", "tick"]

Tick = Callable[[int, int], None]  # (files done, bytes done) since the last call
# (what, total files or None) -> a context yielding the ticker
Listener = Callable[[str, "int | None"], AbstractContextManager[Tick]]

_lock = threading.Lock()
_listener: Listener | None = None
_current: Tick | None = None


@contextlib.contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Route stages to ``listener`` until the block ends."""
    global _listener
    with _lock:
        saved, _listener = _listener, listener
    try:
        yield
    finally:
        with _lock:
            _listener = saved


def _noop(files: int, nbytes: int) -> None:
    pass


@contextlib.contextmanager
def stage(what: str, total_files: int | None = None) -> Iterator[Tick]:
    """Mark work the listener may show; the yielded function counts it (also via ``tick``)."""
    global _current
    with _lock:
        listener = _listener
        claimed = listener is not None and _current is None
        if claimed:
            _current = _noop  # held until the listener's ticker replaces it
    if not claimed or listener is None:
        yield _noop
        return
    try:
        with listener(what, total_files) as ticker:
            _current = ticker
            yield ticker
    finally:
        _current = None


def tick(files: int = 1, nbytes: int = 0) -> None:
    """Count work in the open stage, from any thread; nothing when no stage is drawn."""
    current = _current
    if current is not None:
        current(files, nbytes)
