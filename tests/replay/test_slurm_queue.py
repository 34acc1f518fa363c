"""``QueueWatch``: which Slurm jobs left the queue, from ``squeue``'s answers. Here ``squeue``
is a script on PATH answering as slurmctld does (tests/cluster/ asks the real one)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ledger.replay.slurm_queue import QueueWatch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _squeue(tmp_path: Path, out: str, err: str = "", rc: int = 0) -> dict[str, str]:
    """An environment whose ``squeue`` prints ``out`` and ``err`` and exits ``rc``; it logs
    each call's arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    (tmp_path / "out").write_text(out)
    (tmp_path / "err").write_text(err)
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\ncat {tmp_path}/out\n'
        f"cat {tmp_path}/err >&2\nexit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_ended_and_vanished_jobs_are_reported_running_ones_not(tmp_path: Path) -> None:
    env = _squeue(tmp_path, "11|RUNNING\n12|CANCELLED\n13|PENDING\n")
    clock = Clock()
    watch = QueueWatch(every_s=5, env=env, clock=clock)
    assert watch.ended(["11", "12", "13", "14"]) == {
        "12": "CANCELLED",
        "14": "no longer known to slurmctld",
    }
    calls = (tmp_path / "calls").read_text().split()
    assert "--states=all" in calls and "--jobs=11,12,13,14" in calls
    # Seen ended just now: not yet for a job given 30 s for its result file.
    assert watch.ended(["12"], for_s=30) == {}
    clock.now += 31
    assert watch.ended(["12"], for_s=30) == {"12": "CANCELLED"}


def test_squeue_is_asked_at_most_every_few_seconds(tmp_path: Path) -> None:
    env = _squeue(tmp_path, "11|RUNNING\n")
    clock = Clock()
    watch = QueueWatch(every_s=5, env=env, clock=clock)
    for _ in range(10):
        watch.ended(["11"])
    clock.now += 5
    watch.ended(["11"])
    assert len((tmp_path / "calls").read_text().splitlines()) == 2


def test_no_job_known_any_more_means_all_ended(tmp_path: Path) -> None:
    env = _squeue(tmp_path, "", "slurm_load_jobs error: Invalid job id specified\n", 1)
    watch = QueueWatch(env=env, clock=Clock())
    assert set(watch.ended(["11", "12"])) == {"11", "12"}


@pytest.mark.parametrize(
    "err", ["slurm_load_jobs error: Unable to contact slurm controller (connect failure)", ""]
)
def test_a_controller_that_does_not_answer_is_not_a_dead_job(tmp_path: Path, err: str) -> None:
    env = _squeue(tmp_path, "", err + "\n", 1)
    watch = QueueWatch(env=env, clock=Clock())
    assert watch.ended(["11"]) == {}
    assert watch.error is not None and "squeue failed" in watch.error


def test_a_requeued_job_is_not_ended(tmp_path: Path) -> None:
    env = _squeue(tmp_path, "11|CANCELLED\n")
    clock = Clock()
    watch = QueueWatch(every_s=1, env=env, clock=clock)
    assert watch.ended(["11"]) == {"11": "CANCELLED"}
    (tmp_path / "out").write_text("11|PENDING\n")
    clock.now += 1
    assert watch.ended(["11"]) == {}


def test_without_squeue_nothing_is_reported(tmp_path: Path) -> None:
    watch = QueueWatch(env={"PATH": str(tmp_path)}, clock=Clock())
    assert watch.ended(["11"]) == {} and watch.error is not None
