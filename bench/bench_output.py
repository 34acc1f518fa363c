"""The recorder never stalls the command: its output pump and ``--metric`` matching keep up.

The same child runs side by side, interleaved, without ledger (its output piped through
``tee LOG``, which is what the recorder does: terminal plus log file) and under
``ledger record`` with ``--metric`` patterns. The child times its own writes: a recorder that
falls behind fills the pipe and blocks the child, which this figure shows. Cases: one 50 MB
line without a newline (linear-time splitting, the 1 MiB cap), and a line of 30 ``a`` under
the pattern ``(?P<loss>(a+)+)b`` (exponential for a backtracking engine, linear for RE2)
followed by enough output to fill the pipe.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, in_turn
from .bench_record import _env, _project

NAME = "output: the recorder does not slow the command"
TIMEOUT = 120.0  # seconds one recorded run may take; a stalled recorder is cut off here

CHILD = r"""
import os, sys, time
mode, size, report = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = time.perf_counter()
if mode == "longline":
    block = b"a" * 65536
    for _ in range(size // len(block)):
        os.write(1, block)
    os.write(1, b"\n")
else:
    os.write(1, b"a" * 30 + b"\n")
    line = b"step 1 acc 0.5 " + b"." * 1008 + b"\n"  # 1 KiB lines, each with a metric
    for _ in range(size // len(line)):
        os.write(1, line)
elapsed = time.perf_counter() - t
with open(report, "w") as f:
    f.write(repr(elapsed))
"""

CASES = {
    "longline": ("one 50 MB line without a newline", 50_000_000, 5_000_000),
    "redos": (
        "a line of 30 `a` under `(?P<loss>(a+)+)b`, then 1 MB of 1 KiB lines",
        1_000_000,
        300_000,
    ),
}
METRICS = [
    "--metric",
    "(?P<loss>(a+)+)b",
    "--metric",
    r"step (?P<step>\d+) acc (?P<acc>\S+)",
]


def _run(argv: list[str], cwd: Path, env: dict[str, str], report: Path) -> tuple[float, float]:
    """(the child's own write time, the whole command's wall time); inf if cut off."""
    report.unlink(missing_ok=True)
    t = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return float("inf"), float("inf")
    wall = time.perf_counter() - t
    child = float(report.read_text()) if report.exists() else float("inf")
    return child, wall


def run(quick: bool) -> list[Row]:
    reps = 2 if quick else 4  # even: each side goes first as often (``bench.in_turn``)
    env = _env()
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-output-", dir="/tmp"))
    rows: list[Row] = []
    try:
        project = tmp / "project"
        _project(project, env)
        (project / "child.py").write_text(CHILD)
        report = tmp / "child-seconds"
        for mode, (label, size, quick_size) in CASES.items():
            n = str(quick_size if quick else size)
            child = [sys.executable, "child.py", mode, n, str(report)]
            tee = ["sh", "-c", f'"$@" | tee {tmp / "tee.log"}', "sh", *child]
            recorded = [sys.executable, "-m", "ledger", "record", *METRICS, "--", *child]
            got: dict[str, list[tuple[float, float]]] = {"tee": [], "ledger": []}
            sides = {
                "tee": partial(_run, tee, project, env, report),
                "ledger": partial(_run, recorded, project, env, report),
            }
            # In turn, each after a sync: the recorder stores and fsyncs the log, and the side
            # that ran next met its writes (the disk's write budget, bench/__init__.py).
            for r in range(reps):
                for key, got_one in in_turn(r, sides).items():
                    got[key].append(got_one)
            bare_child = statistics.median(c for c, _ in got["tee"])
            rec_child = statistics.median(c for c, _ in got["ledger"])
            bare_wall = statistics.median(w for _, w in got["tee"])
            rec_wall = statistics.median(w for _, w in got["ledger"])
            ratio = rec_child / bare_child if bare_child > 0 else None
            slowdown = rec_child - bare_child
            rows += [
                Row(NAME, f"{label}: child's write time, piped to `tee`", bare_child, "s"),
                Row(
                    NAME,
                    f"{label}: child's write time, under `ledger record --metric ...`",
                    rec_child,
                    "s",
                    "piped to `tee`",
                    ratio,
                    "≤ 0.5 s slower",
                    slowdown <= 0.5,
                ),
                Row(
                    NAME,
                    f"{label}: whole command, under `ledger record` (start-up and sealing "
                    "included)",
                    rec_wall,
                    "s",
                    "piped to `tee`",
                    rec_wall / bare_wall if bare_wall > 0 else None,
                ),
            ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    note = (
        f"median of {reps} runs of each, in an order that alternates, each after a `sync`; "
        "the child times its own os.write calls, "
        f"so a recorder that falls behind shows as a slower child; a recorded run is cut off "
        f"after {TIMEOUT:.0f} s (shown as inf); patterns: `{METRICS[1]}` and `{METRICS[3]}`"
    )
    rows[0].note = note
    return rows
