"""replay and diff."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from ._choices import ReplayMode, SeedExecutor
from ._common import (
    JsonOpt,
    LedgerOpt,
    err_console,
    finite_non_negative,
    ledger_dir,
    open_store,
    out_console,
    print_json,
)
from .replay_cmd import PRINTER_MODULES, replay_and_print, say_localize

__all__ = ["register"]


def _per_metric(values: list[str]) -> dict[str, tuple[float, float]]:
    from ..errors import UsageError

    out = {}
    for v in values:
        name, sep, rest = v.partition("=")
        rtol, sep2, atol = rest.partition(",")
        try:
            if not sep or not sep2:
                raise ValueError
            r, a = float(rtol), float(atol)
            if not (math.isfinite(r) and math.isfinite(a) and r >= 0 and a >= 0):
                raise ValueError
        except ValueError:
            raise UsageError(
                f"--tol {v!r} is not METRIC=RTOL,ATOL with finite numbers, 0 or more",
                hint="e.g. --tol loss=1e-5,1e-8",
            ) from None
        out[name] = (r, a)
    return out


def _seed_line(total: int) -> Callable[[int, int, Any, float | None], None] | None:
    """One line per finished seed on stderr, only on a terminal (logs get the verdict)."""
    import sys

    from ._output import is_tty

    if not is_tty(sys.stderr):
        return None
    con = err_console()

    def line(i: int, seed: int, run: Any, value: float | None) -> None:
        shown = "no value" if value is None else f"{value:g}"
        con.print(
            f"seed {i + 1}/{total}  {seed}  run {run.run_id} {run.status}: {shown}", markup=False
        )

    return line


def _executor_options(
    mode: ReplayMode,
    name: SeedExecutor,
    job_dir: Path | None,
    partition: str | None,
    time_min: int,
    gpus: int,
    cpus: int | None,
    devices: str | None,
    remote: str | None,
    deadline: float | None = None,
) -> Any:
    from ..errors import UsageError
    from ..replay.executors import ExecutorOptions

    for flag, given in (("--job-remote", remote), ("--job-deadline", deadline)):
        if name is SeedExecutor.local and given is not None:
            raise UsageError(
                f"{flag} is for seed jobs", hint="give --executor submitit-local or slurm"
            )
    if name is SeedExecutor.local and not devices and not gpus:
        return None
    if mode is not ReplayMode.seeds:
        raise UsageError(
            f"--executor, --devices and --gpus-per-job are for seed replays (--executor "
            f"{name.value})",
            hint="use them with --mode seeds",
        )
    try:
        listed = tuple(int(d) for d in devices.split(",") if d.strip()) if devices else ()
    except ValueError:
        raise UsageError(
            f"--devices {devices!r} is not a comma-separated list of GPU numbers",
            hint="e.g. --devices 0,1,2,3",
        ) from None
    ex = ExecutorOptions(
        name=name.value,  # type: ignore[arg-type]
        job_dir=job_dir,
        partition=partition,
        time_min=time_min,
        gpus_per_job=gpus,
        cpus_per_job=cpus,
        devices=listed,
        remote=remote,
        deadline_min=deadline,
    )
    ex.validate()
    return ex


def replay(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, unique prefix, or name."),
    mode: ReplayMode = typer.Option(
        ReplayMode.bitwise, "--mode", help="What reproduction means.", case_sensitive=False
    ),
    rtol: float | None = typer.Option(
        None,
        "--rtol",
        metavar="FLOAT",
        callback=finite_non_negative,
        help="Relative tolerance for all metrics.",
    ),
    atol: float | None = typer.Option(
        None,
        "--atol",
        metavar="FLOAT",
        callback=finite_non_negative,
        help="Absolute tolerance for all metrics.",
    ),
    tol: list[str] = typer.Option(
        [], "--tol", metavar="METRIC=RTOL,ATOL", help="Per-metric METRIC=RTOL,ATOL (repeatable)."
    ),
    seeds: int | None = typer.Option(
        None,
        "--seeds",
        metavar="N",
        help="Seeds to run in seeds mode (default 5, or one per --seed-values).",
    ),
    seed_values: str | None = typer.Option(
        None,
        "--seed-values",
        metavar="LIST",
        help="Seeds mode: replay these seeds, e.g. 11,12,13, instead of drawing them at random.",
    ),
    margin: float | None = typer.Option(
        None,
        "--margin",
        metavar="FLOAT",
        callback=finite_non_negative,
        help="Equivalence margin δ in metric units.",
    ),
    metric: str | None = typer.Option(
        None, "--metric", metavar="NAME", help="Main metric for seeds mode."
    ),
    seed_arg: str | None = typer.Option(
        None, "--seed-arg", metavar="FLAG", help="Argv flag carrying the seed, e.g. --seed."
    ),
    against: list[str] = typer.Option(
        [], "--against", metavar="RUN", help="More runs of the original seed group."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", metavar="N", help="Seeds to run in parallel."),
    keep_workspace: bool = typer.Option(False, "--keep-workspace", help="Keep the workspace."),
    workspace_dir: Path | None = typer.Option(
        None,
        "--workspace-dir",
        metavar="DIR",
        help="Create workspaces here (default: the system temp dir).",
    ),
    strict_env: bool = typer.Option(
        False, "--strict-env", help="Refuse to run if the environment differs."
    ),
    include_logs: bool = typer.Option(False, "--include-logs", help="Compare captured logs too."),
    timing_metric: list[str] = typer.Option(
        [],
        "--timing-metric",
        metavar="NAME",
        help="A metric (or glob) that measures the clock: reported, not compared (repeatable).",
    ),
    from_checkpoint: str | None = typer.Option(
        None,
        "--from-checkpoint",
        metavar="STEP|ID",
        help="Resume from a checkpoint the run saved (step or id prefix) and check the rest.",
    ),
    localize: bool = typer.Option(
        False,
        "--localize",
        help="Where neither run has a trace: replay twice, traced, from the last checkpoint "
        "before the first divergence, and name where they part.",
    ),
    executor: SeedExecutor = typer.Option(
        SeedExecutor.local,
        "--executor",
        help="Where seeds-mode replays run: this process, submitit's local executor, or Slurm.",
        case_sensitive=False,
    ),
    job_dir: Path | None = typer.Option(
        None,
        "--job-dir",
        metavar="DIR",
        help="Seed jobs' folder (logs) goes below DIR; Slurm: on a shared filesystem.",
    ),
    slurm_partition: str | None = typer.Option(
        None, "--slurm-partition", metavar="NAME", help="Slurm partition of the seed jobs."
    ),
    slurm_time: int = typer.Option(
        60, "--slurm-time", metavar="MINUTES", help="Wall time per seed job (Slurm; local timeout)."
    ),
    gpus_per_job: int = typer.Option(0, "--gpus-per-job", metavar="N", help="GPUs per seed job."),
    cpus_per_job: int | None = typer.Option(
        None, "--cpus-per-job", metavar="N", help="CPUs per seed job (Slurm)."
    ),
    devices: str | None = typer.Option(
        None,
        "--devices",
        metavar="LIST",
        help="GPUs handed out to running seeds (local, submitit-local), --gpus-per-job each.",
    ),
    job_remote: str | None = typer.Option(
        None,
        "--job-remote",
        metavar="REMOTE",
        help="Seed jobs replay from this remote and push their runs to it (no shared ledger).",
    ),
    job_deadline: float | None = typer.Option(
        None,
        "--job-deadline",
        metavar="MINUTES",
        help="Stop waiting for seed jobs after this long; those not ended are cancelled "
        "(default: each wave's --slurm-time plus a day).",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Rebuild a run in an isolated workspace, run it again and give a verdict.

    Exit 0 reproduced, 1 not reproduced or inconclusive, 7 could not replay, 130 interrupted."""
    from ..replay.options import ReplayOptions, parse_seed_values

    values = parse_seed_values(seed_values) if seed_values is not None else None
    if seeds is None:
        seeds = len(values) if values is not None else 5
    opts = ReplayOptions(
        mode=mode.value,  # type: ignore[arg-type]
        rtol=rtol,
        atol=atol,
        per_metric=_per_metric(tol),
        seeds=seeds,
        margin=margin,
        metric=metric,
        seed_arg=seed_arg,
        seed_values=values,
        jobs=jobs,
        keep_workspace=keep_workspace,
        strict_env=strict_env,
        include_logs=include_logs,
        timing_metrics=list(timing_metric),
        original_group=list(against),
        from_checkpoint=from_checkpoint,
        localize=localize,
        on_localize=say_localize,
        workspace_parent=workspace_dir,
        on_seed=_seed_line(seeds) if mode is ReplayMode.seeds else None,
        warm=() if json_out else PRINTER_MODULES,
        executor=_executor_options(
            mode,
            executor,
            job_dir,
            slurm_partition,
            slurm_time,
            gpus_per_job,
            cpus_per_job,
            devices,
            job_remote,
            job_deadline,
        ),
    )
    opts.validate()  # --tol, --seeds, --jobs: before the ledger is opened
    rc = replay_and_print(ledger_dir(ledger), run, opts, json_out=json_out, jobs=jobs)
    raise typer.Exit(rc)


def diff(
    a: str = typer.Argument(..., metavar="A", help="First run."),
    b: str = typer.Argument(..., metavar="B", help="Second run."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """What differs between two runs: code, config, data, environment, seeds, first divergence."""
    from ..replay.localize import localize_pair, render_localization
    from ..run.diff import diff_runs, render_diff

    store = open_store(ledger)
    result = diff_runs(store, a, b)
    loc = localize_pair(store, a, b)  # None unless both runs have traces
    if loc is not None:
        result["localization"] = loc
    if json_out:
        print_json(result)
    else:
        con = out_console()
        render_diff(result, con)
        for line in render_localization(loc) if loc is not None else []:
            con.print(line, markup=False)


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command()(diff)
