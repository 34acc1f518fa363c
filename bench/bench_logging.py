"""Per-call cost of ``run.log`` against an append to a Python list and MLflow's ``log_metric``.

MLflow is measured in the same process when importable (file store, the default local backend;
``BENCH_MLFLOW_PATH`` may name a ``pip install --target`` dir appended to ``sys.path``). Otherwise
its row carries the reference figure from ANCHORS.md, labelled as external.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import Row

NAME = "logging"
MLFLOW_REFERENCE_US = 830.0  # ANCHORS.md: MLflow 3.18 file store log_metric, this kind of machine


def _best_per_call(fn: Any, calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn(calls)
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e6


def bench_ledger_log(calls: int, repeats: int) -> dict[str, Any]:
    from ledger.runtime import RankInfo, Run

    with tempfile.TemporaryDirectory() as tmp:
        run = Run(run_dir=Path(tmp), rank=RankInfo())

        done = [0]

        def go(n: int) -> None:
            log, start = run.log, done[0]
            for i in range(start, start + n):
                log(step=i, loss=0.5)
            done[0] = start + n

        go(10)
        us = _best_per_call(go, calls, repeats)
        run.close()
        size = (Path(tmp) / "metrics" / "rank-0.jsonl").stat().st_size
    return {"name": "ledger run.log", "us_per_call": us, "bytes_written": size}


def bench_list_append(calls: int, repeats: int) -> dict[str, Any]:
    def go(n: int) -> None:
        buf: list[tuple[int, float]] = []
        append = buf.append
        for i in range(n):
            append((i, 0.5))

    return {"name": "list.append", "us_per_call": _best_per_call(go, calls, repeats)}


_MLFLOW = """
import sys, tempfile, time
from pathlib import Path
import mlflow
calls, repeats = int(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    mlflow.set_tracking_uri(Path(tmp).as_uri())
    mlflow.set_experiment("bench")
    with mlflow.start_run():
        best = float("inf")
        for r in range(repeats):
            t = time.perf_counter()
            for i in range(calls):
                mlflow.log_metric("loss", 0.5, step=r * calls + i)
            best = min(best, (time.perf_counter() - t) / calls)
print(mlflow.__version__, best * 1e6)
"""


def bench_mlflow(calls: int, repeats: int) -> dict[str, Any]:
    """Measured in a child process (side by side, same machine, same moment), so MLflow's own
    dependencies, e.g. from ``BENCH_MLFLOW_PATH``, never mix with the project's."""
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"}  # 3.x keeps it behind a switch
    extra = os.environ.get("BENCH_MLFLOW_PATH")
    if extra:
        env["PYTHONPATH"] = extra
    out = subprocess.run(
        [sys.executable, "-c", _MLFLOW, str(calls), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        return {
            "name": "mlflow log_metric (external reference from ANCHORS.md, not measured here)",
            "us_per_call": MLFLOW_REFERENCE_US,
            "measured": False,
        }
    version, us = out.stdout.split()[-2:]
    return {
        "name": f"mlflow {version} log_metric (file store)",
        "us_per_call": float(us),
        "measured": True,
    }


def run(quick: bool) -> list[Row]:
    calls, repeats = (20_000, 3) if quick else (200_000, 5)
    ours = bench_ledger_log(calls, repeats)
    listed = bench_list_append(calls, repeats)
    ml = bench_mlflow(max(calls // 100, 50), repeats)
    note = f"best of {repeats} runs of {calls:,} calls (MLflow: {max(calls // 100, 50):,})"
    if not ml["measured"]:
        note += "; MLflow not importable here: its figure is the ANCHORS.md reference"
    us = ours["us_per_call"]
    return [
        Row(
            NAME,
            "ledger run.log, per call",
            us,
            "µs",
            reference=f"{ml['name']} {ml['us_per_call']:.0f} µs",
            ratio=us / ml["us_per_call"],
            target="≤ 10 µs",  # was tests/runtime's test_log_costs_microseconds
            passed=us <= 10,
            note=note,
        ),
        Row(
            NAME,
            "append to a Python list, per call",
            listed["us_per_call"],
            "µs",
            reference=f"ledger run.log {us:.2f} µs",
            ratio=listed["us_per_call"] / us,
            note=note,
        ),
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
