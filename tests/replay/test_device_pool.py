"""``DevicePool``: the local executor's GPUs (``--devices``, ``--gpus-per-job``), handed to
each seed replayed in a thread and given back when it ends. A job executor's seeds get theirs
from the executor. Each seed here is a thread that holds its slot until told to end; a pool
that never answered would leave it waiting, so every wait has a deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ledger.replay.child_env import DEVICES_ENV
from ledger.replay.executors import DevicePool, ExecutorOptions

DEADLINE_S = 60.0
# A seed holds its slot longer than any wait of a test: one that gave its GPUs back on its own
# within DEADLINE_S would let a seed waiting on it pass as one that never had to wait (round
# 11's resumed run: 148 `>= -> >` survived that way).
HOLD_S = 3 * DEADLINE_S


class Seed:
    """A seed replayed in a thread: takes a slot, holds it until ``end()``."""

    def __init__(self, pool: DevicePool) -> None:
        self.asking = threading.Event()
        self.got: list[dict[str, str]] = []
        self._end = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pool,), daemon=True)
        self._thread.start()

    def _run(self, pool: DevicePool) -> None:
        self.asking.set()
        with pool.slot() as gpus:
            self.got.append(gpus)
            self._end.wait(HOLD_S)

    def end(self) -> None:
        self._end.set()
        self._thread.join(DEADLINE_S)
        assert not self._thread.is_alive()


def _until(done: Callable[[], object]) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _local(per_job: int, *devices: int) -> DevicePool:
    return DevicePool(ExecutorOptions(name="local", gpus_per_job=per_job, devices=devices))


def test_running_seeds_get_different_gpus_and_give_them_all_back() -> None:
    pool = _local(2, 4, 5, 6, 7)
    for _ in range(2):  # the second round needs every GPU given back by the first
        a, b = Seed(pool), Seed(pool)
        assert _until(lambda a=a, b=b: a.got and b.got), "a seed did not get its GPUs"
        held = a.got[0][DEVICES_ENV].split(",") + b.got[0][DEVICES_ENV].split(",")
        assert sorted(held) == ["4", "5", "6", "7"]
        a.end()
        b.end()


def test_a_seed_waits_for_a_running_seed_to_give_its_gpu_back() -> None:
    pool = _local(1, 4, 5)
    a, b = Seed(pool), Seed(pool)
    assert _until(lambda: a.got and b.got), "a seed did not get its GPU"
    c = Seed(pool)
    assert c.asking.wait(DEADLINE_S)
    time.sleep(0.5)  # time enough for c to take a slot, were one free
    assert c.got == []  # both GPUs are held: it waits
    a.end()
    assert _until(lambda: c.got), "the waiting seed was not woken"
    assert c.got == a.got  # the GPU a gave back
    b.end()
    c.end()


def test_a_job_executor_s_pool_hands_out_nothing() -> None:
    # submitit-local gives each job its devices itself (run_seed_jobs); the pool is not theirs.
    pool = DevicePool(ExecutorOptions(name="submitit-local", gpus_per_job=1, devices=(0, 1)))
    seed = Seed(pool)
    assert _until(lambda: seed.got), "the seed waited for GPUs the pool does not hold"
    assert seed.got == [{}]
    seed.end()


def test_without_an_executor_or_devices_a_seed_keeps_the_recorded_devices() -> None:
    for ex in (None, ExecutorOptions(name="local")):
        with DevicePool(ex).slot() as given:
            assert given == {}
