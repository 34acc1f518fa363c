r"""Metrics from unmodified scripts: ``--metric`` regexes with named groups over their output.

Each named group is a metric, except ``step`` and ``samples`` (or ``tokens``), which set the
x-axes of the values matched on the same line. Without a ``step`` group the x-axis is the
pattern's match count (0, 1, 2, ...).

Patterns are matched on segments: the text between ``\n`` and ``\r`` (tqdm-style progress
lines rewrite themselves with ``\r``), trailing ``\r`` of a line ignored. Each output stream
is split as it arrives, looking at each byte once, so a long line without a newline costs
linear time. A segment longer than ``SEGMENT_CAP`` bytes is passed through and stored like all
output but not matched (its bytes are not kept); the run gets one note counting them.
Matching uses RE2 (``metric_regex``): linear in the segment's length for every pattern.
"""

from __future__ import annotations

import math
import shlex
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UsageError
from .metric_regex import MetricPattern, compile_metric

if TYPE_CHECKING:  # a type only: importing the models would load pydantic
    from ..records.metrics import MetricPoint

__all__ = ["SEGMENT_CAP", "StdoutMetrics", "compile_patterns"]

AXES = {"step", "samples", "tokens"}
SEGMENT_CAP = 1 << 20  # bytes
SAMPLE_LINES = 3  # first and last output lines kept to show beside a --metric that matched none
SAMPLE_CHARS = 160


def compile_patterns(patterns: list[str]) -> list[MetricPattern]:
    """Validate before anything runs: each regex must compile with RE2 and name a metric."""
    compiled = []
    for text in patterns:
        rx = compile_metric(text)
        metrics = set(rx.groupindex) - AXES
        if not metrics:
            raise UsageError(
                f"--metric {text!r} has no named group for a metric value",
                hint="name each value with (?P<name>...); 'step' and 'samples' set the x-axis",
            )
        compiled.append(rx)
    return compiled


def _number(text: str) -> float | None:
    t = text.strip().rstrip(",;")
    try:
        return float(t)
    except ValueError:
        low = t.lower()
        if low in {"nan", "+nan", "-nan"}:
            return math.nan
        if low in {"inf", "+inf", "infinity"}:
            return math.inf
        if low in {"-inf", "-infinity"}:
            return -math.inf
        return None


class Segments:
    """One stream's bytes, fed in chunks as they arrive, cut into segments (module doc).

    ``write`` scans only the new chunk; an unfinished segment is kept in a bytearray up to
    ``cap`` bytes, past which its bytes are dropped and ``on_long`` is called once it ends.
    Empty segments are emitted as before the split was streamed: ``a\\r\\rb`` gives
    ``a``, ``""``, ``b``; trailing ``\\r`` of a line give nothing; an empty line gives ``""``.
    """

    def __init__(
        self, emit: Callable[[bytes], None], on_long: Callable[[], None], cap: int
    ) -> None:
        self._emit = emit
        self._on_long = on_long
        self._cap = cap
        self._pending = bytearray()  # the unfinished segment
        self._over = False  # the unfinished segment passed the cap
        self._empty = 0  # empty segments held back: emitted only if the line goes on
        self._emitted = False  # the current line has emitted a segment
        self._seen = False  # bytes since the last newline

    def write(self, chunk: bytes) -> None:
        # bytes.find (memchr) for each separator, each resumed after the last one it found:
        # every byte is looked at once per separator.
        start = 0
        nl, cr = chunk.find(b"\n"), chunk.find(b"\r")
        while nl >= 0 or cr >= 0:
            newline = cr < 0 or 0 <= nl < cr
            end = nl if newline else cr
            self._seen = True
            if not self._pending and not self._over and end - start <= self._cap:
                self._end(chunk[start:end], newline)  # the whole segment is in this chunk
            else:
                self._add(chunk, start, end)
                self._end(None, newline)
            start = end + 1
            if newline:
                nl = chunk.find(b"\n", start)
            else:
                cr = chunk.find(b"\r", start)
        if start < len(chunk):
            self._seen = True
            self._add(chunk, start, len(chunk))

    def close(self) -> None:
        """End of stream: a last line without a newline counts as a line."""
        if self._seen:
            self._end(None, True)

    def _add(self, chunk: bytes, start: int, end: int) -> None:
        if self._over or start == end:
            return
        if len(self._pending) + (end - start) > self._cap:
            self._over = True
            self._pending = bytearray()
            return
        self._pending += memoryview(chunk)[start:end]

    def _end(self, segment: bytes | None, newline: bool) -> None:
        long = self._over
        if segment is None:
            segment = bytes(self._pending)
            self._pending = bytearray()
            self._over = False
        if segment or long:
            for _ in range(self._empty):
                self._emit(b"")
            self._empty = 0
            self._emitted = True
            if long:
                self._on_long()
            else:
                self._emit(segment)
        elif newline and not self._emitted:
            self._emit(b"")
        elif not newline:
            self._empty += 1
        if newline:
            self._empty, self._emitted, self._seen = 0, False, False


class StdoutMetrics:
    """Thread-safe: stdout and stderr pump threads each feed their own ``stream()``."""

    def __init__(
        self, patterns: list[MetricPattern], t0: float | None = None, cap: int = SEGMENT_CAP
    ) -> None:
        self.patterns = patterns
        self.t0 = time.monotonic() if t0 is None else t0
        self.cap = cap
        self.points: dict[str, list[MetricPoint]] = defaultdict(list)
        self.unparsed: dict[str, int] = defaultdict(int)
        self.long_segments = 0
        self._counts = [0] * len(patterns)
        self._lock = threading.Lock()
        # A sample of the output, shown (never stored) beside a pattern that matched nothing.
        self.lines = 0  # non-empty segments seen
        self._first: list[bytes] = []
        self._last: deque[bytes] = deque(maxlen=SAMPLE_LINES)
        # Runs of \r or blank lines are empty segments: most patterns cannot match them.
        self._empty_matches = any(True for rx in patterns for _ in rx.finditer(b""))

    def stream(self) -> Segments:
        """A splitter for one output stream; give it the stream's bytes as they arrive."""
        return Segments(self._feed, self._long, self.cap)

    def _long(self) -> None:
        with self._lock:
            self.long_segments += 1

    def _feed(self, raw: bytes) -> None:
        if not self.patterns or (not raw and not self._empty_matches):
            return
        if raw.strip():
            with self._lock:
                self.lines += 1
                if len(self._first) < SAMPLE_LINES:
                    self._first.append(raw[: SAMPLE_CHARS * 4])
                else:
                    self._last.append(raw[: SAMPLE_CHARS * 4])
        # Matched as UTF-8; what is not UTF-8 reads as U+FFFD, as it did when decoded.
        data = raw if raw.isascii() else raw.decode("utf-8", "replace").encode("utf-8")
        now = time.monotonic() - self.t0
        for i, rx in enumerate(self.patterns):
            for groups in rx.finditer(data):
                with self._lock:
                    step_text = groups.get("step")
                    step_val = _number(step_text) if step_text is not None else None
                    step = (
                        int(step_val) if step_val is not None and math.isfinite(step_val) else None
                    )
                    if step is None:
                        step = self._counts[i]
                    self._counts[i] += 1
                    samples = None
                    for axis in ("samples", "tokens"):
                        if groups.get(axis) is not None:
                            v = _number(groups[axis] or "")
                            samples = int(v) if v is not None and math.isfinite(v) else None
                    for name, text in groups.items():
                        if name in AXES or text is None:
                            continue
                        value = _number(text)
                        if value is None:
                            self.unparsed[name] += 1
                            continue
                        self.points[name].append((step, samples, now, value))

    def unmatched(self) -> list[str]:
        """The ``--metric`` patterns that matched no segment of the output."""
        return [rx.text for rx, n in zip(self.patterns, self._counts, strict=True) if n == 0]

    def sample(self) -> list[str]:
        """The first and last output lines (one-line reprs, capped), for a person to compare
        with a pattern that matched none of them; ``…`` stands for the lines between."""

        def shown(raw: bytes) -> str:
            text = raw.decode("utf-8", "replace").rstrip()
            if not text.isprintable():  # control characters as escapes, never sent raw
                text = repr(text)[1:-1]
            return text if len(text) <= SAMPLE_CHARS else text[: SAMPLE_CHARS - 1] + "…"

        with self._lock:
            first, last, lines = list(self._first), list(self._last), self.lines
        skipped = lines - len(first) - len(last)
        return [shown(b) for b in first] + (["…"] if skipped > 0 else []) + [shown(b) for b in last]

    def unmatched_warnings(self) -> list[str]:
        """One message per pattern that matched nothing: the regex and a sample of the
        output lines it was tried on. For the terminal only: the sample is raw output, which
        the stored logs may hold scrubbed of secrets."""
        sample = self.sample()
        shown = (
            ". The output was:\n" + "\n".join("    " + line for line in sample)
            if sample
            else "; there was no output"
        )
        return [
            f"--metric {shlex.quote(text)} matched no line of the output ({self.lines} "
            f"non-empty line(s)), so it recorded no metric{shown}"
            for text in self.unmatched()
        ]

    def notes(self) -> list[str]:
        notes = [
            f"--metric {shlex.quote(text)} matched no line of the output ({self.lines} non-empty "
            "line(s)): no metric was recorded from it"
            for text in self.unmatched()
        ]
        notes += [
            f"--metric group {name!r}: {n} match(es) were not numbers and were skipped"
            for name, n in sorted(self.unparsed.items())
        ]
        if self.long_segments:
            notes.append(
                f"{self.long_segments} output line(s) longer than {self.cap:,} bytes were "
                "stored but not matched against --metric"
            )
        return notes
