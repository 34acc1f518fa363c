"""The two graces of seed jobs, as docs/how-to/cluster-seeds.md states them, on a fake clock:
a cancelled job that does not seal its run is killed after at most a minute, and a Slurm job
that had started and left the queue is given 30 seconds for its result file. Neither test
waits: the clock moves only when the code sleeps or the test moves it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_slurm_queue import Clock, _squeue

from ledger.replay import executors, slurm_queue
from ledger.replay.slurm_queue import QueueWatch

# A job program that ignores SIGTERM, as a job stuck past its cancel does.
DEAF = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


class FakeTime:
    """``time`` as executors sees it: ``sleep`` moves the clock instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class LocalJob:
    """What _cancel reads of a submitit local job: its process, and whether it is done."""

    def __init__(self, process: subprocess.Popen[str], clock: FakeTime) -> None:
        self._process = process
        self._clock = clock
        self.killed_at: float | None = None
        real_kill = process.kill

        def kill() -> None:
            self.killed_at = clock.now
            real_kill()

        process.kill = kill  # type: ignore[method-assign]

    def done(self) -> bool:
        return self._process.poll() is not None


def test_a_cancelled_job_that_does_not_seal_its_run_is_killed_after_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeTime()
    monkeypatch.setattr(executors, "time", clock)
    with subprocess.Popen(
        [sys.executable, "-c", DEAF], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            (tmp_path / "seed-0.pid").write_text(str(proc.pid))
            job = LocalJob(proc, clock)
            start = clock.now
            executors._cancel(
                [job], tmp_path, [0], signal.SIGTERM, executors._Ended(False, tmp_path)
            )
            assert proc.wait(timeout=60) == -signal.SIGKILL  # SIGTERM each second, then KILL
            assert job.killed_at is not None
            assert 60.0 <= job.killed_at - start <= 60.5  # "at most a minute"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class SlurmJob:
    def __init__(self, job_id: str) -> None:
        self.job_id = job_id


def test_a_started_slurm_job_gone_from_the_queue_has_30_seconds_for_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _squeue(tmp_path, "11|CANCELLED\n12|CANCELLED\n")
    clock = Clock()
    watch = QueueWatch(env=env, clock=clock)
    monkeypatch.setattr(slurm_queue, "QueueWatch", lambda: watch)
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "seed-0.pid").write_text("4242")  # seed 0's job started; seed 1's never did
    ended = executors._Ended(True, folder)
    handles: dict[int, Any] = {0: SlurmJob("11"), 1: SlurmJob("12")}
    assert ended.left(handles) == {1: "CANCELLED"}  # never started: no result can come
    clock.now += 29.5
    assert ended.left(handles) == {1: "CANCELLED"}  # started: its result may still arrive
    clock.now += 1.0
    assert ended.left(handles) == {0: "CANCELLED", 1: "CANCELLED"}  # 30 s passed: gone
