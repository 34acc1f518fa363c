"""ledger.store.pool.Pool: every thread started at the first submit, none after, and work
submitted while every thread is busy runs when one is free."""

from __future__ import annotations

import threading

from ledger.store.pool import Pool


def _named(name: str) -> int:
    return sum(t.name == name for t in threading.enumerate())


def test_the_first_submit_starts_every_thread_and_later_ones_start_none() -> None:
    pool = Pool(3, "test-pool-a")
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(10)
    assert _named("test-pool-a") == 3
    # Every thread busy at once, and one more piece of work queued behind them: no new thread.
    gate, ran = threading.Event(), []
    finished = threading.Semaphore(0)

    def blocked(i: int) -> None:
        gate.wait(10)
        ran.append(i)
        finished.release()

    for i in range(4):
        pool.submit(lambda i=i: blocked(i))
    assert _named("test-pool-a") == 3
    gate.set()
    for _ in range(4):
        assert finished.acquire(timeout=10)
    assert sorted(ran) == [0, 1, 2, 3]
    assert _named("test-pool-a") == 3


def test_work_submitted_one_after_another_runs_in_turn() -> None:
    pool = Pool(2, "test-pool-b")
    for i in range(50):
        done = threading.Event()
        pool.submit(done.set)
        assert done.wait(10), i
    assert _named("test-pool-b") == 2
