"""Benchmarks of ``ledger`` against reference tools, measured side by side in one run.

``python -m bench`` runs every module in ``MODULES`` and writes ``docs/benchmarks.md``. To add a
benchmark, write ``bench/bench_<name>.py`` with ``run(quick: bool) -> list[Row]`` and add it to
``MODULES``. Absolute times are noisy on shared machines, so each row states its figure as a
ratio to a reference measured in the same run, and targets are judged on those ratios.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MODULES", "Row", "drop_page_cache", "median_time", "rss_note"]

MODULES = [
    "bench.bench_store",
    "bench.bench_digest",
    "bench.bench_checkpoint",
    "bench.bench_logging",
    "bench.bench_watch",
    "bench.bench_record",
    "bench.bench_replay",
    "bench.bench_output",
    "bench.bench_gate",
    "bench.bench_remote",
    "bench.bench_remote_s3",
    "bench.bench_scale",
]


@dataclass
class Row:
    """One figure. ``ratio`` is ``value`` relative to ``reference`` (explained in ``what``)."""

    bench: str
    what: str
    value: float
    unit: str
    reference: str = ""
    ratio: float | None = None
    target: str = ""
    passed: bool | None = None
    note: str = ""


def median_time(
    fn: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None
) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs; ``setup`` runs untimed before each."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def drop_page_cache(root: Path) -> None:
    """Evict ``root``'s files from the OS page cache (posix_fadvise DONTNEED; they are fsynced)."""
    paths = [root] if root.is_file() else [Path(d) / f for d, _, fs in os.walk(root) for f in fs]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def rss_note() -> str:
    return "peak RSS growth: VmHWM minus the baseline after imports, in a fresh subprocess"
