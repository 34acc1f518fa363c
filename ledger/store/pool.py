"""Daemon threads kept from one call to the next (``Pool``), for work a writer overlaps with its
own: fsyncs, temp files written while a log append is fsynced.

Starting a thread waits until it runs, a wake-up that costs milliseconds on a busy machine; a
checkpoint save started several per save before its threads were kept. The threads are
daemons: a write finishing while the interpreter exits still gets its work done, since the
thread that submitted it waits for it (``concurrent.futures`` refuses new work once
interpreter shutdown has begun). A forked child has none of its parent's threads: the owner of
a pool makes a new one after a fork (``os.register_at_fork``).
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable

__all__ = ["KeptPool", "Pool"]


class Pool:
    """Daemon threads that run what ``submit`` is given, all ``size`` started at the first
    ``submit`` and kept: a write finishing while the interpreter exits still gets its work
    done, since the writing thread waits for it. ``name``: their threads' name.

    All at once, not one as work finds every thread busy: a thread that has just finished its
    work counts as busy until it looks for more, so on a busy machine a later call could find
    none idle and start one more, a wake-up paid again by a save that should start none."""

    def __init__(self, size: int, name: str = "ledger-pool") -> None:
        self._size, self._name = size, name
        self._lock = threading.Lock()
        self._work: collections.deque[Callable[[], None]] = collections.deque()
        self._ready = threading.Semaphore(0)
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on a pool thread; ``fn`` must not raise (it reports its own errors)."""
        with self._lock:
            self._work.append(fn)
            start, self._threads = self._size - self._threads, self._size
            wake = self._idle > 0
            if wake:
                self._idle -= 1  # one idle thread is woken for it
            # else every thread is busy (or about to start): one takes it when free
        for _ in range(start):
            threading.Thread(target=self._serve, name=self._name, daemon=True).start()
        if wake:
            self._ready.release()

    def _serve(self) -> None:
        while True:
            with self._lock:
                fn = self._work.popleft() if self._work else None
                if fn is None:
                    self._idle += 1
            if fn is None:
                self._ready.acquire()
                continue
            fn()


class KeptPool:
    """A process's one ``Pool`` of ``size`` threads named ``name``: made at the first call,
    kept, and forgotten in a forked child (which has none of its parent's threads, and must
    not trust a lock a parent thread may have held at the fork: ``lock`` is made anew)."""

    def __init__(self, size: int, name: str) -> None:
        self._size, self._name = size, name
        self.lock = threading.Lock()
        self._pool: Pool | None = None
        os.register_at_fork(after_in_child=self._forget)

    def __call__(self) -> Pool:
        with self.lock:
            if self._pool is None:
                self._pool = Pool(self._size, self._name)
            return self._pool

    def _forget(self) -> None:
        self._pool, self.lock = None, threading.Lock()
