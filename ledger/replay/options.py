"""What a replay is asked to do: ``ReplayOptions``, a plain dataclass below every module that
reads it (the engine, the output comparison, the CLI, audits)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import UsageError
from .child_env import check_extra_env

if TYPE_CHECKING:
    from ..records.run import Run

__all__ = [
    "EXECUTORS",
    "ExecutorName",
    "ExecutorOptions",
    "Mode",
    "ReplayOptions",
    "check_seed_values",
    "check_tolerance",
    "parse_seed_values",
]

Mode = Literal["bitwise", "tolerance", "seeds"]
ExecutorName = Literal["local", "submitit-local", "slurm"]
EXECUTORS: tuple[str, ...] = ("local", "submitit-local", "slurm")


def check_tolerance(name: str, value: float | None) -> None:
    """A tolerance or margin is a finite number, 0 or more: ``inf`` would call any replay
    reproduced and NaN none, and neither can be stored in the verdict (canonical JSON)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise UsageError(
            f"{name} must be a finite number, 0 or more; got {value}",
            hint="e.g. --rtol 1e-5 --atol 1e-8",
        )


ARG_LIMIT = 2**31  # a seed on the command line (--seed-arg): drawn roots are taken modulo it
ROOT_LIMIT = 2**63  # a LEDGER_SEED_ROOT: drawn roots have 63 bits

_HINT = "e.g. --seed-values 11,12,13 with --seeds 3 (or without --seeds: one seed per value)"


def parse_seed_values(text: str) -> list[int]:
    """``11,12,13`` as integers; refused unless every item is a decimal integer."""
    items = [item.strip() for item in text.split(",")]
    try:
        if not all(items):
            raise ValueError
        return [int(item, 10) for item in items]
    except ValueError:
        raise UsageError(
            f"--seed-values {text!r} is not a comma-separated list of integers", hint=_HINT
        ) from None


def check_seed_values(opts: ReplayOptions) -> None:
    """Refuse given seeds that no seeds replay can use (before the ledger is opened)."""
    values = opts.seed_values
    if values is None:
        return
    if opts.mode != "seeds":
        raise UsageError("--seed-values is for seeds mode", hint="add --mode seeds")
    if len(values) != opts.seeds:
        raise UsageError(
            f"--seed-values gives {len(values)} seed(s) for --seeds {opts.seeds}: give one "
            "value per seed",
            hint=_HINT,
        )
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise UsageError(
            f"--seed-values repeats {', '.join(map(str, repeated))}: the same seed twice is "
            "one run counted twice, not two draws",
            hint="give distinct seeds",
        )
    limit, what = (
        (ARG_LIMIT, f"a seed on the command line ({opts.seed_arg})")
        if opts.seed_arg
        else (ROOT_LIMIT, "a LEDGER_SEED_ROOT")
    )
    bad = [v for v in values if not 0 <= v < limit]
    if bad:
        raise UsageError(
            f"--seed-values {bad[0]} is out of range for {what}: each must be from 0 to "
            f"{limit - 1}",
            hint=_HINT,
        )


@dataclass(frozen=True)
class ExecutorOptions:
    """Where and how seed jobs run. ``local`` is the in-process thread pool (not this module)."""

    name: ExecutorName = "local"
    job_dir: Path | None = None  # submitit's folder goes below it (Slurm: on a shared filesystem)
    partition: str | None = None  # Slurm
    time_min: int = 60  # Slurm wall time per job (submitit-local: timeout)
    gpus_per_job: int = 0
    cpus_per_job: int | None = None  # Slurm
    devices: tuple[int, ...] = ()  # submitit-local: the GPUs handed out, gpus_per_job each
    remote: str | None = None  # a remote (name or URL): jobs replay from it and push to it
    deadline_min: float | None = None  # the whole wait for the seed jobs; None: deadline_s's

    def deadline_s(self, seeds: int, jobs: int) -> float:
        """Seconds the seed jobs are waited for, from the first submission: ``deadline_min``,
        or by default each wave of ``jobs`` jobs its time limit, plus a day of queueing."""
        if self.deadline_min is not None:
            return self.deadline_min * 60
        waves = -(-seeds // max(1, jobs))
        return (waves * self.time_min + 24 * 60) * 60

    @property
    def sets_devices(self) -> bool:
        """Whether a seed's ``CUDA_VISIBLE_DEVICES`` is this executor's choice: the local
        one's with ``--gpus-per-job``, a job's always (replay/executors.py)."""
        return self.name != "local" or self.gpus_per_job > 0

    def validate(self) -> None:
        if self.name not in EXECUTORS:
            raise UsageError(
                f"unknown executor {self.name!r}", hint="one of " + ", ".join(EXECUTORS)
            )
        if self.time_min < 1:
            raise UsageError("--slurm-time must be at least 1 minute")
        if self.deadline_min is not None and not (0 < self.deadline_min < 1e7):
            raise UsageError(
                f"--job-deadline must be a positive number of minutes; got {self.deadline_min}",
                hint="e.g. --job-deadline 600 (ten hours for every seed job to end)",
            )
        if self.gpus_per_job < 0 or (self.cpus_per_job is not None and self.cpus_per_job < 1):
            raise UsageError("--gpus-per-job must be 0 or more and --cpus-per-job 1 or more")
        if (
            self.name in ("local", "submitit-local")
            and self.gpus_per_job
            and (len(self.devices) < self.gpus_per_job)
        ):
            raise UsageError(
                f"--gpus-per-job {self.gpus_per_job} needs at least that many --devices",
                hint="list the GPUs to hand out, e.g. --devices 0,1,2,3",
            )
        if self.name == "local" and self.devices and self.gpus_per_job < 1:
            raise UsageError(
                "--devices needs --gpus-per-job: how many of them each seed gets",
                hint="e.g. --gpus-per-job 1 --devices 0,1",
            )
        if self.name == "slurm" and self.job_dir is None:
            raise UsageError(
                "the slurm executor needs --job-dir on a filesystem the compute nodes share",
                hint="e.g. --job-dir $HOME/ledger-jobs (the ledger must be shared too)",
            )


@dataclass
class ReplayOptions:
    mode: Mode = "bitwise"
    rtol: float | None = None
    atol: float | None = None
    per_metric: dict[str, tuple[float, float]] = field(default_factory=dict)
    seeds: int = 5
    margin: float | None = None
    metric: str | None = None  # main metric for seeds mode
    seed_arg: str | None = None  # argv flag that carries the seed, e.g. --seed
    jobs: int = 1
    keep_workspace: bool = False
    strict_env: bool = False
    include_logs: bool = False
    workspace_parent: Path | None = None
    bootstrap_seed: int | None = None
    # Seeds mode: the seeds to replay, one per --seeds (--seed-values); None draws them at
    # random. With --seed-arg each is the value put on the command line, else the root of
    # LEDGER_SEED_ROOT (check_seed_values; seed_values.py: not the original's own seed).
    seed_values: list[int] | None = None
    original_group: list[str] = field(default_factory=list)  # more original seeds (run ids)
    from_checkpoint: str | None = None  # checkpoint id/prefix or step saved by the original
    # Where neither run has a trace: two traced passes from the original's last checkpoint
    # before the first divergence (replay/localize_resume.py); on_localize hears the cost first.
    localize: bool = False
    on_localize: Callable[[str], None] | None = None
    # Seeds mode: called as each replay ends with (index, seed, replay run, its main metric).
    on_seed: Callable[[int, int, Run, float | None], None] | None = None
    # Seeds mode: run each seed as a job of a scheduler (ledger/replay/executors.py); None
    # runs them in this process's thread pool.
    executor: ExecutorOptions | None = None
    # Set over the recorded env. Names replay sets itself (LEDGER_RESUME_FROM, LEDGER_SEED_ROOT,
    # ...: replay/child_env.py) are refused by validate().
    extra_env: dict[str, str] = field(default_factory=dict)
    # Metric names (or globs) that measure the clock, beyond those ledger knows
    # (ledger/replay/compare/volatile.py): reported beside the verdict, not inside it.
    timing_metrics: list[str] = field(default_factory=list)
    # Modules the caller needs once the replayed command has exited (the CLI: its printer),
    # imported while it runs (ledger/run/warm.py).
    warm: tuple[str, ...] = ()

    def validate(self) -> None:
        """Refuse values no replay can use, before any work (the CLI calls it as it parses;
        ``replay()`` again, for other callers)."""
        for name, value in (
            ("--rtol", self.rtol),
            ("--atol", self.atol),
            ("--margin", self.margin),
        ):
            check_tolerance(name, value)
        for metric, (rtol, atol) in self.per_metric.items():
            check_tolerance(f"--tol {metric} RTOL", rtol)
            check_tolerance(f"--tol {metric} ATOL", atol)
        if self.mode == "seeds" and self.seeds < 2:
            raise UsageError(
                "--seeds must be at least 2 in seeds mode", hint="5 or more is advised"
            )
        if self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        check_seed_values(self)
        if self.localize and self.mode == "seeds":
            raise UsageError("--localize localizes one replay: use bitwise or tolerance")
        if self.executor is not None:
            self.executor.validate()
        check_extra_env(
            self.extra_env, sets_devices=self.executor is not None and self.executor.sets_devices
        )
