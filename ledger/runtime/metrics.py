"""Metric logging that costs about a microsecond: append to a buffer, flush in the background.

``log`` checks and appends one tuple; a daemon thread turns the buffer into JSON lines every
``FLUSH_INTERVAL`` seconds and writes each batch with one ``os.write`` to
``metrics/rank-<r>.jsonl``. Lines are whole, so a SIGKILL loses at most the unflushed buffer
(about half a second) and possibly leaves one torn last line, which ingest skips and notes.

Line kinds: a header ``{"header": {...}}`` each time a process opens the file, points
``{"t": seconds, "s": step, "x": samples, "n": count, "v": {name: value}}`` and notes
``{"note": text}``. Non-finite values are written as JSON's ``NaN``/``Infinity`` extension.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from ._files import write_all
from ._warn import warn_once

__all__ = ["FLUSH_INTERVAL", "MEMORY_POINTS", "MetricWriter", "check_name"]

FLUSH_INTERVAL = 0.5
MEMORY_POINTS = 100_000  # points a detached run keeps (oldest dropped first)
MAX_NAME = 200
_NOTE_CAP = 20  # notes per kind of problem; further occurrences are only counted

Point = tuple[float, int | None, int | None, int | None, dict[str, Any]]


def check_name(name: object) -> str | None:
    """Why ``name`` cannot be a metric name, or None if it can."""
    if not isinstance(name, str) or not name:
        return "metric names must be non-empty strings"
    if len(name) > MAX_NAME:
        return f"metric names are at most {MAX_NAME} characters"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        return "metric names must not contain control characters"
    return None


def _coerce(value: Any) -> float | int | str:
    """A number, or the reason (a str) why ``value`` is not one. ``.item()`` syncs on CUDA."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str | bytes) or value is None:
        return f"{type(value).__name__} is not a number"
    item = getattr(value, "item", None)
    if item is not None:
        numel = getattr(value, "numel", None) or getattr(value, "size", None)
        count = numel() if callable(numel) else numel
        if isinstance(count, int) and count != 1:
            return f"{type(value).__name__} with {count} elements is not a scalar"
        try:
            value = item()
        except (TypeError, ValueError, RuntimeError) as e:
            return f"{type(value).__name__}.item() failed: {e}"
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | float):
            return value
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return f"{type(value).__name__} is not a number"


def _index(value: Any, what: str) -> int | str | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        out = value.__index__()
    except (AttributeError, TypeError):
        return f"{what} {value!r} is not an integer"
    if out < 0:
        return f"{what} {out} is negative"
    return int(out)


class MetricWriter:
    """The per-process buffer. ``path`` None keeps the last ``MEMORY_POINTS`` points in memory."""

    def __init__(self, path: Path | None, header: dict[str, Any], t0: float | None = None) -> None:
        self.path = path
        self.header = header
        self.t0 = time.monotonic() if t0 is None else t0
        self.pid = os.getpid()
        self.buffer: deque[Point | str] = deque(maxlen=None if path else MEMORY_POINTS)
        self._names: set[str] = set()
        self._last_step = -1
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None
        self.closed = False
        self.forked = False

    # -- the hot path ------------------------------------------------------------------------
    def add(self, step: Any, samples: Any, n: Any, values: dict[str, Any]) -> None:
        """Append one point. Plain ints/floats with known names skip every slow check."""
        t = time.monotonic()
        if type(step) is not int or step < self._last_step or samples is not None or n is not None:
            step, samples, n = self._check_axes(step, samples, n)
        elif step >= 0:
            self._last_step = step
        names = self._names
        for k, v in values.items():
            tv = type(v)
            if (tv is not float and tv is not int) or k not in names:
                values = self._check_values(values)
                break
        if not values:
            return
        self.buffer.append((t, step, samples, n, values))
        if self._thread is None and self.path is not None:
            self._not_running()

    def _not_running(self) -> None:
        if self.forked:
            self.buffer.clear()
            warn_once(
                "forked-log", "metrics logged in a forked child (DataLoader worker?) are dropped"
            )
        elif self.closed:
            self.flush()  # logged after close (e.g. from another atexit hook): write at once
        else:
            self._start()

    # -- slow paths ---------------------------------------------------------------------------
    def _problem(self, kind: str, message: str) -> None:
        count = self._counts.get(kind, 0) + 1
        self._counts[kind] = count
        if count <= _NOTE_CAP:
            warn_once(kind, message)

    def note(self, text: str) -> None:
        if not self.forked:
            self.buffer.append(text)

    def _check_axes(self, step: Any, samples: Any, n: Any) -> tuple[Any, Any, Any]:
        out: list[int | None] = []
        for value, what in ((step, "step"), (samples, "samples"), (n, "n")):
            got = _index(value, what)
            if isinstance(got, str):
                self._problem(f"bad-{what}", f"{got}; the point is kept without it")
                got = None
            out.append(got)
        s = out[0]
        if s is not None:
            if s < self._last_step:
                self._problem(
                    "step-backwards",
                    f"step went backwards from {self._last_step} to {s}; points are kept as logged",
                )
            self._last_step = s
        return out[0], out[1], out[2]

    def _check_values(self, values: dict[str, Any]) -> dict[str, Any]:
        good: dict[str, Any] = {}
        for k, v in values.items():
            if k not in self._names:
                why = check_name(k)
                if why is not None:
                    self._problem("bad-name", f"{why}: dropped metric {k!r}")
                    continue
                self._names.add(k)
            tv = type(v)
            if tv is float or tv is int:
                good[k] = v
                continue
            got = _coerce(v)
            if isinstance(got, str):
                self._problem("bad-value", f"dropped value of metric {k!r}: {got}")
                continue
            good[k] = got
        return good

    # -- flushing -----------------------------------------------------------------------------
    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self.closed:
                return
            self._thread = threading.Thread(target=self._loop, name="ledger-metrics", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL):
            self.flush()

    def _encode(self, item: Point | str) -> str:
        if isinstance(item, str):
            return json.dumps({"note": item})
        t, step, samples, n, values = item
        rec: dict[str, Any] = {"t": round(t - self.t0, 6), "s": step, "v": values}
        if samples is not None:
            rec["x"] = samples
        if n is not None:
            rec["n"] = n
        try:
            return json.dumps(rec, separators=(",", ":"))
        except (TypeError, ValueError):  # a huge int; keep the rest of the batch
            rec["v"] = {k: (float(v) if math.isfinite(float(v)) else v) for k, v in values.items()}
            return json.dumps(rec, separators=(",", ":"))

    def flush(self) -> None:
        """Write everything buffered so far: whole lines, one write per batch."""
        if self.path is None or self.forked:
            return
        with self._lock:
            buf = self.buffer
            count = len(buf)
            if not count:
                return
            items = [buf.popleft() for _ in range(count)]
            try:
                lines = [self._encode(i) for i in items]
                if self._fd is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                    lines.insert(0, json.dumps({"header": self.header}))
                write_all(self._fd, ("\n".join(lines) + "\n").encode("utf-8"))
            except (OSError, TypeError, ValueError) as e:
                warn_once("metrics-write", f"could not write metrics to {self.path}: {e}")

    def close(self) -> None:
        """Stop the thread and write what is left (atexit, exceptions, ``Run.close``)."""
        if self.closed:
            return
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)
        self._thread = None
        self.flush()
        self.closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's buffer and thread are not ours to write."""
        self.buffer = deque(maxlen=1)
        self._thread = None
        self._fd = None
        self._lock = threading.Lock()
        self.closed = self.forked = True
