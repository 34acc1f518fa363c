"""run.log: cost, flushing, crash safety and defined behaviour on bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from ledger.runtime import RankInfo, Run, _warn, current_run, log, set_current_run
from ledger.runtime.ingest import collect_runtime
from ledger.runtime.metrics import FLUSH_INTERVAL
from ledger.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _env(run_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env.update(PYTHONPATH=str(ROOT), LEDGER_RUN_DIR=str(run_dir), LEDGER_RUN_ID="r1", **extra)
    return env


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k in ("LEDGER_RUN_DIR", "LEDGER_RUN_ID", "LEDGER_SEED_ROOT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    _warn.reset_warnings()
    set_current_run(None)
    yield
    set_current_run(None)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_detached_run_keeps_points_in_memory() -> None:
    run = current_run()
    assert not run.attached
    log(step=0, samples=32, loss=1.5)
    run.log(step=1, loss=1.25, acc=0.5)
    pts = run.points()
    assert [p[1:] for p in pts] == [
        (0, 32, None, {"loss": 1.5}),
        (1, None, None, {"loss": 1.25, "acc": 0.5}),
    ]
    assert 0 <= pts[0][0] <= pts[1][0]


def test_attached_run_writes_header_and_points(tmp_path: Path) -> None:
    run = Run(run_id="r1", run_dir=tmp_path, rank=RankInfo(1, 1, 2))
    for i in range(5):
        run.log(step=i, samples=8 * (i + 1), n=8, loss=float(i))
    run.close()
    lines = _lines(tmp_path / "metrics" / "rank-1.jsonl")
    assert lines[0]["header"]["rank"] == 1 and lines[0]["header"]["world_size"] == 2
    assert [(p["s"], p["x"], p["n"], p["v"]) for p in lines[1:]] == [
        (i, 8 * (i + 1), 8, {"loss": float(i)}) for i in range(5)
    ]


def test_background_thread_flushes_without_close(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    path = tmp_path / "metrics" / "rank-0.jsonl"
    deadline = time.monotonic() + 5 * FLUSH_INTERVAL
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_lines(path)) == 2
    run.close()


def test_log_after_close_is_written_at_once(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    run.close()
    run.log(step=1, loss=2.0)
    values = [p["v"] for p in _lines(tmp_path / "metrics" / "rank-0.jsonl") if "v" in p]
    assert values == [{"loss": 1.0}, {"loss": 2.0}]


def test_scalars_of_numpy_and_torch_are_converted(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=np.int64(3), a=np.float32(0.5), b=torch.tensor(2.0), c=torch.tensor([7]), d=True)
    run.close()
    point = _lines(tmp_path / "metrics" / "rank-0.jsonl")[1]
    assert point["s"] == 3 and point["v"] == {"a": 0.5, "b": 2.0, "c": 7, "d": 1}


def test_bad_input_never_raises_warns_once_and_is_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    set_current_run(run)
    run.log(step=0, loss="high", ok=1.0)
    run.log(step=1, loss="higher", ok=2.0)
    run.log(step=2, loss=torch.ones(3), ok=3.0)
    run.log(step=3, **{"bad\nname": 1.0, "ok": 4.0})
    run.log(step=1, ok=5.0)  # backwards: kept
    run.log(step=-4, samples="many", ok=6.0)  # kept without step/samples
    run.log(step=7, loss=None, other=object())  # nothing left: no point
    run.log(step=8, x=float("nan"), y=float("inf"))
    run.close()
    err = capsys.readouterr().err
    assert err.count("dropped value") == 1  # once per kind of problem: the str, not the tensor
    assert "control characters" in err
    assert "step went backwards from 3 to 1" in err
    lines = _lines(tmp_path / "metrics" / "rank-0.jsonl")
    points = [(p["s"], p["v"]) for p in lines if "v" in p]
    assert points[:6] == [
        (0, {"ok": 1.0}),
        (1, {"ok": 2.0}),
        (2, {"ok": 3.0}),
        (3, {"ok": 4.0}),
        (1, {"ok": 5.0}),
        (None, {"ok": 6.0}),
    ]
    step, last = points[6]
    assert step == 8 and last["x"] != last["x"] and last["y"] == float("inf")  # NaN kept
    assert len(points) == 7
    notes = [p["note"] for p in lines if "note" in p]
    assert sum("str is not a number" in n for n in notes) == 2  # every occurrence is noted
    assert any("step -4 is negative" in n for n in notes)
    assert any("Tensor with 3 elements" in n for n in notes)


def test_nonfinite_values_are_kept_and_first_bad_step_summarized(
    tmp_path: Path, store: Store
) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    for i, v in enumerate([1.0, 0.5, float("nan"), 0.25, float("inf")]):
        run.log(step=10 * i, loss=v)
    run.close()
    cap = collect_runtime(tmp_path, store)
    (summary,) = cap.metrics
    assert summary.rank is None and summary.count == 5
    assert summary.first_nonfinite_step == 20 and summary.nonfinite_count == 2
    assert summary.last_finite == 0.25


_SCRIPT = """
import os, signal, sys, time
import ledger.runtime as lr
mode = sys.argv[1]
for i in range(3):
    lr.log(step=i, loss=float(i))
if mode == "raise":
    raise RuntimeError("boom")
if mode == "kill":
    # Wait for the background flusher (no explicit flush) to put these three on disk.
    mine = lr.current_run().file("metrics", ".jsonl")
    deadline = time.monotonic() + 60
    while b'"s":2,' not in (mine.read_bytes() if mine.exists() else b""):
        assert time.monotonic() < deadline, "the metric flusher never wrote step 2"
        time.sleep(0.05)
    for i in range(3, 6):
        lr.log(step=i, loss=float(i))
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize(
    ("mode", "rc", "steps"), [("exit", 0, 3), ("raise", 1, 3), ("kill", -9, 3)]
)
def test_points_survive_exit_exception_and_sigkill(
    tmp_path: Path, store: Store, mode: str, rc: int, steps: int
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], env=_env(tmp_path), capture_output=True, timeout=60
    )
    assert proc.returncode == rc, proc.stderr
    cap = collect_runtime(tmp_path, store)
    (summary,) = cap.metrics
    assert summary.count >= steps  # kill: the last three may or may not have been flushed
    assert summary.last_step is not None and summary.last_step >= 2


def test_torn_last_line_is_ignored_and_noted(tmp_path: Path, store: Store) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    run.close()
    path = tmp_path / "metrics" / "rank-0.jsonl"
    with path.open("ab") as f:
        f.write(b'{"t":1.0,"s":1,"v":{"lo')
    cap = collect_runtime(tmp_path, store)
    assert cap.metrics[0].count == 1
    assert any("torn last line" in n for n in cap.notes)


def test_forked_child_does_not_write_the_parents_points(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    set_current_run(run)
    run.log(step=0, loss=1.0)  # buffered, not yet flushed, when we fork
    pid = os.fork()
    if pid == 0:  # child: log, exit through atexit-free path of multiprocessing workers
        log(step=1, loss=99.0)
        run.close()
        os._exit(0)
    os.waitpid(pid, 0)
    run.close()
    values = [p["v"] for p in _lines(tmp_path / "metrics" / "rank-0.jsonl") if "v" in p]
    assert values == [{"loss": 1.0}]


def test_signal_default_is_untouched() -> None:
    current_run()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
