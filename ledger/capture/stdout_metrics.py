"""Metrics from unmodified scripts: ``--metric`` regexes with named groups over their output.

Each named group is a metric, except ``step`` and ``samples`` (or ``tokens``), which set the
x-axes of the values matched on the same line. Without a ``step`` group the x-axis is the
pattern's match count (0, 1, 2, ...).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import defaultdict

from ..errors import UsageError
from ..records.metrics import MetricPoint

__all__ = ["StdoutMetrics", "compile_patterns"]

AXES = {"step", "samples", "tokens"}


def compile_patterns(patterns: list[str]) -> list[re.Pattern[str]]:
    """Validate before anything runs: each regex must compile and name at least one metric."""
    compiled = []
    for text in patterns:
        try:
            rx = re.compile(text)
        except re.error as e:
            raise UsageError(
                f"--metric {text!r} is not a valid regular expression: {e}",
                hint=r"use Python regex syntax, e.g. 'step (?P<step>\d+) loss (?P<loss>\S+)'",
            ) from None
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


class StdoutMetrics:
    """Thread-safe: stdout and stderr pump threads both feed lines in."""

    def __init__(self, patterns: list[re.Pattern[str]], t0: float | None = None) -> None:
        self.patterns = patterns
        self.t0 = time.monotonic() if t0 is None else t0
        self.points: dict[str, list[MetricPoint]] = defaultdict(list)
        self.unparsed: dict[str, int] = defaultdict(int)
        self._counts = [0] * len(patterns)
        self._lock = threading.Lock()

    def feed(self, raw: bytes) -> None:
        if not self.patterns:
            return
        line = raw.decode("utf-8", "replace").rstrip("\r")
        # tqdm-style progress lines rewrite themselves with \r: look at every segment.
        for segment in line.split("\r"):
            self._feed_segment(segment)

    def _feed_segment(self, line: str) -> None:
        now = time.monotonic() - self.t0
        for i, rx in enumerate(self.patterns):
            for m in rx.finditer(line):
                groups = m.groupdict()
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

    def notes(self) -> list[str]:
        return [
            f"--metric group {name!r}: {n} match(es) were not numbers and were skipped"
            for name, n in sorted(self.unparsed.items())
        ]
