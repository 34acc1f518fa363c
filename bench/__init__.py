"""Benchmarks of ``ledger`` against reference tools, measured side by side in one run.

``python -m bench`` runs every module in ``MODULES`` and writes ``docs/benchmarks.md``. To add a
benchmark, write ``bench/bench_<name>.py`` with ``run(quick: bool) -> list[Row]`` and add it to
``MODULES``. Absolute times are noisy on shared machines, so each row states its figure as a
ratio to a reference measured in the same run, and targets are judged on those ratios.
``LEDGER_BENCH_BASELINE=REV`` (e.g. ``main``) adds, where a benchmark supports it, the same
measurement of the code at git revision REV, run side by side: a before/after in one run.

Sides that write (and fsync) run through ``in_turn``: the disk of the machine the figures come
from has a host-side write budget (fsynced writes at 0.5-0.9 GB/s for the first 0.8-1 GB, then
0.11-0.18 GB/s until it rests; bench/bench_checkpoint_sharded.py), so a side timed after
another's writes meets a more spent disk, and a fixed order tilts a ratio by position, not by
code. ``in_turn`` runs the sides of one round in an order that turns from round to round, each
after an ``os.sync()``; over every two rounds each side runs after each other side once.
``rest`` leaves the disk idle before a measurement that must start on a rested disk.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# Idle seconds ``rest`` leaves the disk (the sharded bench's rest before each torchrun).
REST_SECONDS = 10

__all__ = [
    "MODULES",
    "REST_SECONDS",
    "Row",
    "baseline_checkout",
    "bytecode_env",
    "drop_page_cache",
    "in_turn",
    "median_time",
    "rest",
    "rss_note",
    "turn_order",
]

MODULES = [
    "bench.bench_store",
    "bench.bench_digest",
    "bench.bench_checkpoint",
    "bench.bench_checkpoint_sharded",
    "bench.bench_logging",
    "bench.bench_watch",
    "bench.bench_record",
    "bench.bench_reads",
    "bench.bench_fingerprint",
    "bench.bench_replay",
    "bench.bench_output",
    "bench.bench_gate",
    "bench.bench_remote",
    "bench.bench_remote_s3",
    "bench.bench_many_objects",
    "bench.bench_scale",
    "bench.bench_trace",
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


def baseline_checkout(dest: Path) -> tuple[str, Path] | None:
    """The ``ledger`` package at git revision ``$LEDGER_BENCH_BASELINE`` (e.g. ``main``),
    extracted under ``dest``: (short revision, directory for PYTHONPATH), or None when unset.
    Benchmarks that take it measure the earlier code side by side with this checkout."""
    import subprocess

    rev = os.environ.get("LEDGER_BENCH_BASELINE")
    if not rev:
        return None
    repo = Path(__file__).resolve().parent.parent
    short = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", short, "ledger"], cwd=repo, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return short, dest


def bytecode_env(env: dict[str, str], cache: Path) -> dict[str, str]:
    """``env`` with bytecode cached under ``cache``, as an installed package has it: without
    it (PYTHONDONTWRITEBYTECODE) every child compiles ledger's sources again, 0.1 s a start."""
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def rss_note() -> str:
    return "peak RSS growth: VmHWM minus the baseline after imports, in a fresh subprocess"


def turn_order(r: int, n: int) -> list[int]:
    """The order in which round ``r`` runs ``n`` sides (indices): an even round runs them
    rotated by ``r``, the odd round after it the same order reversed. So in every two rounds
    each side runs before each other side exactly once and its mean position is the middle:
    over an even number of rounds no side meets the disk after more of the others' writes
    than another. Two sides simply alternate (AB, BA, AB, ...)."""
    if n < 1 or r < 0:
        raise ValueError(f"turn_order needs a round >= 0 and n >= 1, got r={r}, n={n}")
    k = (r - r % 2) % n
    order = list(range(k, n)) + list(range(k))
    return order[::-1] if r % 2 else order


def in_turn(r: int, sides: Mapping[str, Callable[[], T]], sync: bool = True) -> dict[str, T]:
    """Run every side of one comparison once, in round ``r``'s order (``turn_order``), each
    after an ``os.sync()`` (untimed: the dirty pages another side left are written back
    before the next starts, not on its clock). Results by name, in ``sides``' order. Use an
    even number of rounds: then every side has run after every other side equally often."""
    names = list(sides)
    got: dict[str, T] = {}
    for i in turn_order(r, len(names)):
        if sync:
            os.sync()
        got[names[i]] = sides[names[i]]()
    return {name: got[name] for name in names}


def rest(done: Path | None = None, seconds: float = REST_SECONDS) -> None:
    """Delete ``done`` (a finished measurement's folder, if given), write back every dirty
    page and leave the disk idle ``seconds``: what follows starts on a disk that has had the
    same rest as every other measurement started this way (the write budget, module
    docstring)."""
    import shutil

    if done is not None:
        shutil.rmtree(done, ignore_errors=True)
    os.sync()
    time.sleep(seconds)
