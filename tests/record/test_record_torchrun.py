"""`ledger record -- torchrun ...`: one run for all ranks, each rank's metrics and RNG states in
it, and a rank that kills itself leaves a sealed, failed run with the survivors' metrics."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import require_component, subprocess_env

from ledger.records.metrics import MetricSeries
from ledger.records.run import Run
from ledger.run.execute import run_processes
from ledger.run.find import load_run
from ledger.store import Store

pytest.importorskip("torch")

pytestmark = [pytest.mark.slow, pytest.mark.distributed]

SCRIPT = """
import os, signal, sys, time
import torch.distributed as dist
import ledger
import ledger.runtime

dist.init_process_group("gloo")
rank = dist.get_rank()
ledger.seed()
n = 3 if rank == 0 else 1  # unequal real sample counts per rank
seen = 0
for step in range(5):
    seen += n
    ledger.log(step=step, samples=seen, n=n, loss=1.0 / (step + 1) + rank)
    if sys.argv[1] == "kill" and rank == 1 and step == 2:
        ledger.save_rng_state("before-kill", step=step)
        # Wait for the background flusher (no explicit flush) to put steps 0..2 on disk.
        mine = ledger.runtime.current_run().file("metrics", ".jsonl")
        deadline = time.monotonic() + 60
        while b'"s":2,' not in (mine.read_bytes() if mine.exists() else b""):
            assert time.monotonic() < deadline, "the metric flusher never wrote step 2"
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    if sys.argv[1] in ("hang", "orphan") and step == 0:
        ledger.runtime.current_run().flush()
        open(f"ready-{rank}", "w").close()
        if sys.argv[1] == "orphan" and rank == 0:
            # Once rank 1 has logged and flushed step 0 too (else, on a loaded machine, the
            # recorder stops it before it did, and its series is rightly empty).
            deadline = time.monotonic() + 60
            while not os.path.exists("ready-1") and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(os.getppid(), signal.SIGKILL)  # the launcher dies; the workers live on
        time.sleep(3600)  # stopped by the recorder, never awaited
ledger.save_rng_state("end", step=4)
dist.barrier()
dist.destroy_process_group()
"""


def _torchrun() -> str:
    beside = Path(sys.executable).with_name("torchrun")
    found = str(beside) if beside.is_file() else shutil.which("torchrun")
    require_component(found, "torchrun", "make install (it comes with torch)")
    assert found is not None
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    (tmp_path / "train.py").write_text(SCRIPT)
    env = subprocess_env(OMP_NUM_THREADS="1")
    for name in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    init = [sys.executable, "-m", "ledger", "init"]
    subprocess.run(init, cwd=tmp_path, env=env, check=True, capture_output=True)
    cmd = [
        sys.executable,
        "-m",
        "ledger",
        "record",
        "--json",
        "--",
        _torchrun(),
        "--nproc_per_node=2",
        "--nnodes=1",
        "--master_addr=127.0.0.1",
        f"--master_port={_free_port()}",
        "train.py",
        mode,
    ]
    return subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,  # no terminal: the recorder forwards signals to the group
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(tmp_path: Path, proc: subprocess.Popen[str]) -> tuple[int, str, Store, Run]:
    try:
        _, err = proc.communicate(timeout=600)  # a deadline for a hang, not a speed goal
    finally:
        proc.kill()
    summary = json.loads(err.strip().splitlines()[-1])
    store = Store.open(tmp_path / ".ledger")
    _, run = load_run(store, summary["run_id"])
    return proc.returncode, err, store, run


def _record(tmp_path: Path, mode: str) -> tuple[int, str, Store, Run]:
    return _finish(tmp_path, _start(tmp_path, mode))


def _wait_ready(tmp_path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    try:
        while not all((tmp_path / f"ready-{r}").exists() for r in (0, 1)):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the ranks never got going"
            time.sleep(0.1)
    except BaseException:
        # Leave no recorder, launcher or worker behind: SIGTERM makes the recorder stop them.
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        finally:
            proc.kill()
        raise


def _series(store: Store, run: Run, source: str, rank: int | None) -> MetricSeries:
    (m,) = [m for m in run.metrics if m.name == "loss" and m.source == source and m.rank == rank]
    return MetricSeries.model_validate(store.get_json(m.series))


def test_torchrun_ranks_are_recorded_in_one_run(tmp_path: Path) -> None:
    code, err, store, run = _record(tmp_path, "ok")
    assert code == 0, err[-3000:]
    assert run.status == "succeeded" and run.exit_code == 0
    r0, r1 = _series(store, run, "api", 0), _series(store, run, "api", 1)
    both = _series(store, run, "combined", None)
    assert r0.step == r1.step == both.step == list(range(5))
    assert both.samples == [4 * (i + 1) for i in range(5)]
    expected = [((1 / (s + 1)) * 3 + (1 / (s + 1) + 1) * 1) / 4 for s in range(5)]
    assert both.value == pytest.approx(expected)
    assert run.runtime is not None
    assert run.runtime["ranks"] == [0, 1] and run.runtime["world_size"] == 2
    ends = {s["rank"]: s for s in run.runtime["rng_states"] if s["label"] == "end"}
    assert set(ends) == {0, 1} and ends[0]["state"] != ends[1]["state"]
    assert store.objects.has(ends[0]["state"]) and store.objects.has(ends[1]["state"])
    assert {s["rank"] for s in run.runtime["seeds"]} == {0, 1}
    # The staging directory is gone once the run is sealed.
    assert not (tmp_path / ".ledger" / "staging" / run.run_id).exists()


def test_a_rank_killing_itself_leaves_a_sealed_failed_run(tmp_path: Path) -> None:
    code, _, store, run = _record(tmp_path, "kill")
    assert code != 0
    assert run.status in ("failed", "killed")
    assert code == (run.exit_code if run.exit_code is not None else 128 + (run.signal or 0))
    r0 = _series(store, run, "api", 0)
    assert r0.step == list(range(5))  # the surviving rank's metrics are all there
    r1 = _series(store, run, "api", 1)
    assert r1.step[:3] == [0, 1, 2] and 4 not in r1.step
    assert run.runtime is not None
    labels = {(s["rank"], s["label"]) for s in run.runtime["rng_states"]}
    assert (1, "before-kill") in labels and (0, "end") in labels and (1, "end") not in labels
    assert run.stderr is not None and store.objects.has(run.stderr)


def test_sigterm_to_the_recorder_stops_torchrun_and_its_workers(tmp_path: Path) -> None:
    proc = _start(tmp_path, "hang")
    _wait_ready(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)
    code, _, store, run = _finish(tmp_path, proc)
    assert run.status == "interrupted" and run.interrupted_by == signal.SIGTERM
    assert code != 0
    assert run_processes(run.run_id) == []  # torchrun stopped its workers (own sessions)
    assert _series(store, run, "api", 0).step == [0]
    assert _series(store, run, "api", 1).step == [0]


def test_workers_orphaned_by_a_killed_launcher_are_stopped(tmp_path: Path) -> None:
    proc = _start(tmp_path, "orphan")
    # Without the straggler stop the recorder waited for the workers' hour-long sleep (their
    # stdout is its pipe) while they could still write into the run being sealed: _finish's
    # deadline ran out.
    code, _, store, run = _finish(tmp_path, proc)
    assert run.status == "killed" and run.signal == signal.SIGKILL and code == 128 + 9
    assert run_processes(run.run_id) == []
    (note,) = [n for n in run.notes if "still running after the command exited" in n]
    assert note.startswith("2 process(es)")
    assert _series(store, run, "api", 0).step == [0]
    assert _series(store, run, "api", 1).step == [0]
