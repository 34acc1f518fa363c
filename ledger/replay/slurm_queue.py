"""Which Slurm jobs have left the queue, asked of ``squeue`` (slurmctld), never ``sacct``.

submitit learns that a job ended from its result file or from ``sacct``. A job that dies
without writing its result (cancelled while pending, a lost node) is then only seen by
``sacct``, and a cluster without accounting answers every ``sacct`` with "accounting storage
is disabled": submitit waits for it forever. slurmctld itself always knows its jobs: ``squeue
--states=all`` lists them until ``MinJobAge`` after they end, and answers "Invalid job id" for
a job it no longer holds. A job in neither place is gone.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping

__all__ = ["ENDED_STATES", "QueueWatch"]

# squeue's long state names for a job that will not run again (requeued jobs are PENDING).
ENDED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
_ASK_EVERY_S = 5.0
_SQUEUE_TIMEOUT_S = 60.0


class QueueWatch:
    """Asks ``squeue`` at most every ``every_s`` seconds about the jobs it is given and
    remembers, for each, when it was first seen ended or missing."""

    def __init__(
        self,
        every_s: float = _ASK_EVERY_S,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._every = every_s
        self._env = dict(os.environ if env is None else env)
        self._clock = clock
        self._asked = float("-inf")
        self._ended: dict[str, tuple[float, str]] = {}  # job id -> (first seen, state)
        self.error: str | None = None  # squeue's last failure, when it could not answer

    def ended(self, job_ids: Iterable[str], for_s: float = 0.0) -> dict[str, str]:
        """Job id -> last known state, for each of ``job_ids`` that has ended (or left
        slurmctld) at least ``for_s`` seconds ago. A job squeue could not be asked about is
        never reported: an unreachable controller is not a dead job."""
        ids = [str(j) for j in job_ids]
        if ids and self._clock() - self._asked >= self._every:
            self._ask(ids)
        now = self._clock()
        return {
            j: self._ended[j][1]
            for j in ids
            if j in self._ended and now - self._ended[j][0] >= for_s
        }

    def _ask(self, ids: list[str]) -> None:
        self._asked = self._clock()
        try:
            r = subprocess.run(
                [
                    "squeue",
                    "--noheader",
                    "--states=all",
                    "--format=%i|%T",
                    "--jobs=" + ",".join(ids),
                ],
                env=self._env,
                capture_output=True,
                text=True,
                timeout=_SQUEUE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            self.error = f"squeue could not be run: {e}"
            return
        if r.returncode != 0:
            if "invalid job id" not in r.stderr.lower():
                self.error = f"squeue failed: {r.stderr.strip()[-300:]}"
                return
            states: dict[str, str] = {}  # none of them is known to slurmctld any more
        else:
            states = {}
            for line in r.stdout.splitlines():
                job, _, text = line.strip().partition("|")
                states[job] = text.split()[0] if text.strip() else "UNKNOWN"
        self.error = None
        now = self._clock()
        for j in ids:
            seen = states.get(j)
            if seen is not None and seen not in ENDED_STATES:
                self._ended.pop(j, None)  # in the queue (again, when requeued)
            elif j not in self._ended:
                self._ended[j] = (now, seen or "no longer known to slurmctld")
            else:
                self._ended[j] = (self._ended[j][0], seen or self._ended[j][1])
