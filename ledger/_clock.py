"""The wall clock and the monotonic clock read as one pair."""

from __future__ import annotations

import time

__all__ = ["clock_pair"]

_PAIR_S = 0.0002
_PAIR_TRIES = 5


def clock_pair() -> tuple[float, float]:
    """(wall, monotonic): ``time.time()`` and the ``time.monotonic()`` of the same instant.

    Every wall time of a metric point is its process's wall start plus a monotonic offset, so
    the two must be read together: a process preempted between the reads (a loaded machine)
    would put every point that late or early. The wall is read between two monotonic reads and
    paired with their middle; a pair whose reads are more than ``_PAIR_S`` apart is read again
    (at most ``_PAIR_TRIES`` times, the tightest kept)."""
    best = (float("inf"), 0.0, 0.0)
    for _ in range(_PAIR_TRIES):
        m0 = time.monotonic()
        wall = time.time()
        m1 = time.monotonic()
        if m1 - m0 < best[0]:
            best = (m1 - m0, wall, (m0 + m1) / 2)
        if m1 - m0 <= _PAIR_S:
            break
    return best[1], best[2]
