"""The scheduler job a run is recorded in: Slurm's job (id, array index, cluster, partition,
nodes, tasks, CPUs and GPUs per task, time limit) and torchrun's rendezvous, read from the
variables each sets, by name. Nothing else of the environment is read, so no secret can come
in; every value is capped and must be UTF-8.

Built as plain JSON (the run record's ``job``, ``ledger.records.run.JobContext``), without
pydantic: ``ledger record`` writes it on its plain path. Slurm before 23.02 does not put the
time limit in the job's environment: it is asked of ``squeue`` (a few milliseconds, at most
``_SQUEUE_TIMEOUT_S``), and left null when that fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from .rawbytes import is_utf8

__all__ = ["describe_job", "job_context", "launcher_warning"]

_MAX = 1000  # characters of one value: a node list is written compressed ("gpu[01-64]")
_SQUEUE_TIMEOUT_S = 5.0

# field -> (variables, first set wins; int or str)
_SLURM: dict[str, tuple[tuple[str, ...], type]] = {
    "job_id": (("SLURM_JOB_ID", "SLURM_JOBID"), str),
    "array_job_id": (("SLURM_ARRAY_JOB_ID",), str),
    "array_task_id": (("SLURM_ARRAY_TASK_ID",), int),
    "cluster": (("SLURM_CLUSTER_NAME",), str),
    "partition": (("SLURM_JOB_PARTITION",), str),
    "job_name": (("SLURM_JOB_NAME",), str),
    "step_id": (("SLURM_STEP_ID", "SLURM_STEPID"), str),
    "nodes": (("SLURM_JOB_NODELIST", "SLURM_NODELIST"), str),
    "num_nodes": (("SLURM_JOB_NUM_NODES", "SLURM_NNODES"), int),
    "ntasks": (("SLURM_NTASKS", "SLURM_NPROCS"), int),
    "task_rank": (("SLURM_PROCID",), int),
    "node_rank": (("SLURM_NODEID",), int),
    "cpus_per_task": (("SLURM_CPUS_PER_TASK",), int),
    "gpus_per_task": (("SLURM_GPUS_PER_TASK",), str),
    "gpus": (("SLURM_GPUS_ON_NODE", "SLURM_GPUS"), str),
}
_RENDEZVOUS: dict[str, tuple[tuple[str, ...], type]] = {
    "master_addr": (("MASTER_ADDR",), str),
    "master_port": (("MASTER_PORT",), int),
    "node_rank": (("GROUP_RANK", "NODE_RANK"), int),
    "local_world_size": (("LOCAL_WORLD_SIZE",), int),
    "run_id": (("TORCHELASTIC_RUN_ID",), str),
}
# Programs that start a job or a step: recorded as a command, the run is the launcher's.
_LAUNCHERS = {"srun", "sbatch", "salloc"}


def _read(
    environ: Mapping[str, str], spec: dict[str, tuple[tuple[str, ...], type]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, (names, kind) in spec.items():
        value: Any = None
        for name in names:
            text = environ.get(name)
            if text is None or not is_utf8(text) or not text.strip():
                continue
            text = text.strip()[:_MAX]
            if kind is int:
                try:
                    value = int(text)
                except ValueError:
                    continue
            else:
                value = text
            break
        out[field] = value
    return out


def _minutes(text: str) -> int | None:
    """squeue's ``%l``: ``MM``, ``MM:SS``, ``HH:MM:SS`` or ``D-HH:MM:SS``; None for UNLIMITED."""
    days, _, rest = text.strip().rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        d = int(days) if days else 0
    except ValueError:
        return None
    if len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, m, s = (0, *parts) if not days else (parts[0], parts[1], 0)
    elif len(parts) == 1:
        h, m, s = (parts[0], 0, 0) if days else (0, parts[0], 0)
    else:
        return None
    return d * 1440 + h * 60 + m + (1 if s else 0)


def _time_limit(environ: Mapping[str, str], job_id: str) -> int | None:
    start, end = environ.get("SLURM_JOB_START_TIME"), environ.get("SLURM_JOB_END_TIME")
    if start and end and start.isdigit() and end.isdigit():  # Slurm 23.02 and later
        return max(0, int(end) - int(start)) // 60
    squeue = shutil.which("squeue", path=environ.get("PATH"))
    if squeue is None or not job_id.replace("_", "").isdigit():
        return None
    try:
        r = subprocess.run(
            [squeue, "--noheader", "--format=%l", f"--jobs={job_id}"],
            capture_output=True,
            text=True,
            timeout=_SQUEUE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env=dict(environ),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.split()
    return _minutes(lines[0]) if r.returncode == 0 and lines else None


def job_context(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The run record's ``job``: None outside a Slurm job and a torchrun worker."""
    environ = os.environ if environ is None else environ
    slurm = _read(environ, _SLURM)
    rendezvous = _read(environ, _RENDEZVOUS)
    in_slurm = slurm["job_id"] is not None
    if not in_slurm and rendezvous["master_addr"] is None:
        return None
    job: dict[str, Any] = {"scheduler": "slurm" if in_slurm else None}
    job.update(slurm if in_slurm else dict.fromkeys(slurm))
    job["time_limit_min"] = _time_limit(environ, slurm["job_id"]) if in_slurm else None
    job["rendezvous"] = rendezvous if rendezvous["master_addr"] is not None else None
    return job


def describe_job(job: Mapping[str, Any] | None) -> str:
    """One line for ``ledger show`` and the web view's run page; "" without a job."""
    if not job:
        return ""
    parts: list[str] = []
    if job.get("scheduler") == "slurm":
        head = f"slurm job {job.get('job_id')}"
        if job.get("array_job_id") is not None:
            head += f" (array {job.get('array_job_id')}_{job.get('array_task_id')})"
        if job.get("step_id") is not None:
            head += f" step {job.get('step_id')}"
        parts.append(head)
        for key, label in (("cluster", "cluster"), ("partition", "partition")):
            if job.get(key):
                parts.append(f"{label} {job[key]}")
        if job.get("nodes"):
            parts.append(f"nodes {job['nodes']} ({job.get('num_nodes') or '?'})")
        if job.get("ntasks") is not None:
            rank = f", this is task {job['task_rank']}" if job.get("task_rank") is not None else ""
            parts.append(f"{job['ntasks']} task(s){rank}")
        if job.get("cpus_per_task") is not None:
            parts.append(f"{job['cpus_per_task']} CPUs/task")
        if job.get("gpus_per_task"):
            parts.append(f"GPUs/task {job['gpus_per_task']}")
        elif job.get("gpus"):
            parts.append(f"GPUs {job['gpus']}")
        if job.get("time_limit_min") is not None:
            parts.append(f"limit {job['time_limit_min']} min")
    rdzv = job.get("rendezvous")
    if isinstance(rdzv, Mapping):
        where = f"{rdzv.get('master_addr')}:{rdzv.get('master_port')}"
        line = f"torchrun master {where}"
        if rdzv.get("node_rank") is not None:
            line += f", node rank {rdzv['node_rank']}"
        if rdzv.get("local_world_size") is not None:
            line += f", {rdzv['local_world_size']} worker(s) on this node"
        parts.append(line)
    return ", ".join(parts)


def launcher_warning(argv: list[str]) -> str | None:
    """The warning for ``ledger record -- srun ...``: the recorder runs outside the job."""
    name = os.path.basename(argv[0]) if argv else ""
    if name not in _LAUNCHERS:
        return None
    inside = (
        'sbatch --wrap "ledger record -- python train.py"'
        if name == "sbatch"
        else f"{name} ledger record -- python train.py"
    )
    return (
        f"the command starts with {name}: ledger records {name} from outside the job, not the "
        "tasks it runs (their job, devices and environment are not captured); run the "
        f"recorder inside the job instead, e.g. `{inside}`"
    )
