"""Store put/get of one large file vs a plain copy (+ BLAKE3 of the same file), with peak RSS
growth at two sizes to show memory stays flat. ``LEDGER_BENCH_BASELINE=REV`` adds the put and
the get of the code at REV, interleaved with the others (wall and CPU time: the steadier on a
busy host); REV's get reads the object REV's put stored, in REV's object format.

Copy, put and get each write and fsync the whole file: in each repetition every operation runs
once, in an order that turns from repetition to repetition, each after a ``sync``
(``bench.in_turn``: the disk's write budget, bench/__init__.py); a put goes into a new store
each time, a get reads a store filled (by the same code's put) before the repetitions start."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import Row, baseline_checkout, in_turn, rss_note

NAME = "store: put/get of a large file"
MB = 10**6
REPO = Path(__file__).resolve().parent.parent
REPEAT = 6  # even: every operation runs after every other one equally often (``in_turn``)
# op -> (source, destination) templates; "get" reads back the object a put stored in
# "{tmp}/ledger-get" before the repetitions; "put" stores into a new "{tmp}/ledger" each time.
OPS = {
    "copy": ("{src}", "{tmp}/copy.bin"),
    "hash": ("{src}", ""),
    "put": ("{src}", "{tmp}/ledger"),
    "get": ("{tmp}/ledger-get:{oid}", "{tmp}/out.bin"),
}


def _make(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 16 * MB)
            f.write(os.urandom(n))
            left -= n
        os.fsync(f.fileno())


def _measure(op: str, src: str, dst: str, code: Path | None = None) -> tuple[float, int, float]:
    """(seconds, peak RSS growth, CPU seconds) of ``op`` in a fresh process; ``code``: the
    ``ledger`` package of another revision (the bench's own child module stays this one's).
    Run from this file's folder, not ``REPO``: ``python -m`` puts its working directory first
    on ``sys.path``, where this checkout's ``ledger`` shadowed ``code``'s (every ``before``
    row measured this checkout until then)."""
    path = f"{code}{os.pathsep}{REPO}" if code is not None else str(REPO)
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, "-m", "bench._child", op, src, dst],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
    ).stdout
    res = json.loads(out)
    return float(res["seconds"]), int(res["rss_growth"]), float(res["cpu"])


def _imports_from(code: Path) -> None:
    """Fail unless a child started as ``_measure`` starts them imports ``ledger`` from ``code``."""
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{REPO}"}
    found = subprocess.run(
        [sys.executable, "-c", "import ledger; print(ledger.__file__)"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(code.resolve()):
        raise RuntimeError(f"the baseline's children import {found}, not the code under {code}")


def run(quick: bool) -> list[Row]:
    sizes = [20 * MB, 100 * MB] if quick else [100 * MB, 1000 * MB]
    rows: list[Row] = []
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-store-", dir="/tmp"))
    base = baseline_checkout(tmp / "baseline")
    try:
        if base is not None:
            _imports_from(base[1])
        for size in sizes:
            label = f"{size // MB} MB"
            src = tmp / "src.bin"
            _make(src, size)
            from ledger._hashing import hash_file

            oid = hash_file(src)
            runs: dict[str, list[tuple[float, int, float]]] = {op: [] for op in OPS}
            before: dict[str, list[tuple[float, int, float]]] = {"put": [], "get": []}
            # The stores the gets read, each filled by its own code's put (REV's in REV's
            # object format), untimed.
            _measure("put", str(src), f"{tmp}/ledger-get")
            if base is not None:
                _measure("put", str(src), f"{tmp}/ledger-before-get", code=base[1])
            sides: dict[str, Callable[[], tuple[float, int, float]]] = {}
            for op, (a, b) in OPS.items():
                args = [x.format(tmp=tmp, oid=oid, src=src) for x in (a, b)]
                sides[op] = partial(_measure, op, args[0], args[1])
                if op in before and base is not None:
                    # REV's own stores: its put fills a new one, its get reads its own.
                    was = [x.replace(f"{tmp}/ledger", f"{tmp}/ledger-before") for x in args]
                    sides[f"{op} before"] = partial(_measure, op, was[0], was[1], code=base[1])
            for i in range(REPEAT):  # every op once, in an order that turns (``in_turn``)
                for key, got in in_turn(i, sides).items():
                    op, _, at_rev = key.partition(" ")
                    (before if at_rev else runs)[op].append(got)
                shutil.rmtree(tmp / "ledger")
                shutil.rmtree(tmp / "ledger-before", ignore_errors=True)
            copy_s, hash_s, put_s, get_s = (statistics.median(r[0] for r in runs[op]) for op in OPS)
            copy_rss, hash_rss, put_rss, get_rss = (max(r[1] for r in runs[op]) for op in OPS)
            copy_cpu, get_cpu = (
                statistics.median(r[2] for r in runs[op]) for op in ("copy", "get")
            )
            from ledger._hashing import hash_file as _h

            assert _h(tmp / "out.bin") == oid, "get returned other bytes"
            gbs = size / 1e9
            ref = copy_s + hash_s
            rows += [
                Row(NAME, f"copyfile + fsync, {label}", gbs / copy_s, "GB/s", note=rss_note()),
                Row(NAME, f"BLAKE3 of the file, {label}", gbs / hash_s, "GB/s"),
                Row(
                    NAME,
                    f"store put_file, {label}",
                    gbs / put_s,
                    "GB/s",
                    "copy + hash time",
                    put_s / ref,
                    target="≤ 1.3×",
                    passed=put_s / ref <= 1.3,
                    note=f"throughput: median of {REPEAT} interleaved runs, the order turning from "
                    "run to run, each after a `sync` (the disk's write budget: bench/__init__.py); "
                    "ratio = time / reference time",
                ),
                Row(
                    NAME,
                    f"store get (copy_to + fsync), {label}",
                    gbs / get_s,
                    "GB/s",
                    "copy time",
                    get_s / copy_s,
                    target="≤ 1.2×",
                    passed=get_s / copy_s <= 1.2,
                    note="store get: a raw object of 64 KiB or more holds its content from "
                    "offset 4096 (codec 0x02, docs/format.md), so the kernel's copy (sendfile) "
                    "moves whole pages as cp's does; from offset 1, before it, no page lined up",
                ),
                Row(
                    NAME,
                    f"store get, CPU time (user + system), {label}",
                    get_cpu,
                    "s",
                    "copy's CPU time",
                    get_cpu / copy_cpu,
                    note="CPU time: of the measured process, user + system, median of the runs",
                ),
            ]
            if before["get"]:
                p_s = statistics.median(r[0] for r in before["put"])
                b_s, b_cpu = (statistics.median(r[k] for r in before["get"]) for k in (0, 2))
                rows += [
                    Row(
                        NAME,
                        f"store put_file at {base[0]} (before), {label}",  # type: ignore[index]
                        gbs / p_s,
                        "GB/s",
                        "copy + hash time",
                        p_s / ref,
                        note="rows at REV (before): REV's put fills a store of its own and REV's "
                        "get reads it (REV's object format), each in turn with this checkout's; "
                        "before 2026-12-05 22:38 UTC these children ran from the repository "
                        "root, where `python -m` imported this checkout's ledger, not REV's",
                    ),
                    Row(
                        NAME,
                        f"store get at {base[0]} (before), {label}",  # type: ignore[index]
                        gbs / b_s,
                        "GB/s",
                        "copy time",
                        b_s / copy_s,
                    ),
                    Row(
                        NAME,
                        f"store get at {base[0]} (before), CPU time, {label}",  # type: ignore[index]
                        b_cpu,
                        "s",
                        "copy's CPU time",
                        b_cpu / copy_cpu,
                    ),
                ]
            for op, rss in [
                ("copy", copy_rss),
                ("hash", hash_rss),
                ("put", put_rss),
                ("get", get_rss),
            ]:
                rows.append(
                    Row(
                        NAME,
                        f"peak RSS growth, {op}, {label}",
                        rss / 2**20,
                        "MiB",
                        "file size",
                        rss / size,
                        "< 64 MiB at any size",
                        rss < 64 * 2**20,
                    )
                )
            for p in ("copy.bin", "out.bin", "src.bin"):
                (tmp / p).unlink()
            shutil.rmtree(tmp / "ledger-get")
            shutil.rmtree(tmp / "ledger-before-get", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows
