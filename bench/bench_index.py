"""A ledger with many runs: ``ledger ls``, ``ledger show``, ``reindex`` and the web view's runs
table, against MLflow's ``search_runs`` on a file store holding the same runs when MLflow is
importable.

The runs are written through the store API (series, config and run records, refs and log lines
as the recorder writes them), not recorded: recording 100,000 commands would measure the
recorder. ``BENCH_RUNS`` sets how many (default 100,000; ``--quick``: 2,000).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import Row, median_time

NAME = "index: many runs"
_REPO = Path(__file__).resolve().parent.parent


def _generate(store: Any, n: int) -> None:
    from datetime import UTC, datetime, timedelta

    from ledger.records.config import ConfigCapture
    from ledger.records.metrics import build_series, summarize
    from ledger.records.run import Run

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    contract = store.put_json({"kind": "contract-stub", "schema": 1})
    for i in range(n):
        started = t0 + timedelta(seconds=i)
        run_id = started.strftime("%Y%m%dT%H%M%S.%fZ") + f"-{i:08x}"
        series = build_series(
            "loss", "api", [(s, None, float(s), 1.0 / (s + 1 + i % 7)) for s in range(5)]
        )
        config = ConfigCapture(
            argv=["python", "train.py"], resolved={"lr": 10.0 ** -(i % 5), "bs": 32 * (1 + i % 4)}
        )
        run = Run.model_validate(
            {
                "run_id": run_id,
                "name": f"exp{i % 50}",
                "tags": {"sweep": str(i % 10)},
                "status": "succeeded",
                "exit_code": 0,
                "started": started,
                "ended": started + timedelta(seconds=60),
                "wall_seconds": 60.0,
                "host": "bench",
                "pid": 1,
                "contract": contract,
                "contract_digest": contract,
                "resolved_config": store.put_json(config.to_json()),
                "metrics": [summarize(series, store.put_json(series.to_json()))],
                "ledger_version": "0.1.0",
            }
        )
        store.set_ref(
            f"runs/{run_id}", store.put_json(run.to_json()), op="seal", status="succeeded"
        )


def _cli(root: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(_REPO)}

    def go() -> None:
        subprocess.run(
            [sys.executable, "-m", "ledger", "--ledger", str(root), *args],
            check=True,
            capture_output=True,
            env=env,
        )

    return median_time(go, 3)


def _mlflow(n: int, tmp: Path) -> float | None:
    try:
        import mlflow
    except ImportError:
        return None
    mlflow.set_tracking_uri((tmp / "mlruns").as_uri())
    client = mlflow.tracking.MlflowClient()
    exp = client.create_experiment("bench")
    for i in range(n):
        r = client.create_run(exp, run_name=f"exp{i % 50}")
        client.log_param(r.info.run_id, "lr", 10.0 ** -(i % 5))
        client.log_metric(r.info.run_id, "loss", 0.5)
    return median_time(lambda: mlflow.search_runs([exp], max_results=50), 3)


def run(quick: bool) -> list[Row]:
    from ledger.index import Index
    from ledger.store import Store
    from ledger.ui import data

    n = int(os.environ.get("BENCH_RUNS", "2000" if quick else "100000"))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".ledger"
        store = Store.init(root)
        t = time.perf_counter()
        _generate(store, n)
        rows.append(
            Row(NAME, f"write {n:,} runs through the store API", time.perf_counter() - t, "s")
        )
        with Index(store) as index:
            t = time.perf_counter()
            index.rebuild()
            rebuild = time.perf_counter() - t
        size = sum(p.stat().st_size for p in root.glob("index.sqlite*"))
        rows.append(Row(NAME, f"reindex, {n:,} runs", rebuild, "s"))
        rows.append(
            Row(NAME, "index size", size / 2**20, "MiB", note=f"{size / n:.0f} bytes a run")
        )
        version = _cli(root, "--version")
        ls = _cli(root, "ls")
        rows.append(
            Row(
                NAME,
                "ledger ls (default page)",
                ls,
                "s",
                "ledger --version",
                ls / version,
                "≤ 0.2 s at 100,000 runs",
                ls <= 0.2 if n >= 100_000 else None,
            )
        )
        some = sorted(name for name, _ in store.refs.iter("runs/"))[n // 2].split("/", 1)[1]
        show = _cli(root, "show", some)
        rows.append(
            Row(
                NAME,
                "ledger show RUN",
                show,
                "s",
                "ledger --version",
                show / version,
                "≤ 0.3 s at 100,000 runs",
                show <= 0.3 if n >= 100_000 else None,
            )
        )
        page = median_time(lambda: data.runs_table(store, per_page=50), 3)
        rows.append(
            Row(
                NAME,
                "ledger ui runs table, first page (in process)",
                page,
                "s",
                "",
                None,
                "≤ 0.5 s at 100,000 runs",
                page <= 0.5 if n >= 100_000 else None,
            )
        )
        ml = _mlflow(n, Path(tmp))
        if ml is None:  # no row with a made-up value: the note says it was not measured
            last = rows.pop()
            rows.append(
                replace(last, note="mlflow search_runs: not measured, mlflow is not installed")
            )
        else:
            rows.append(
                Row(
                    NAME,
                    "mlflow search_runs, file store, 50 runs",
                    ml,
                    "s",
                    "ledger ls (default page)",
                    ls / ml,
                )
            )
    return rows
