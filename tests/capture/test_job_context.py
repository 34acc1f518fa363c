"""The Slurm job and torchrun rendezvous a run is recorded in: real ``ledger record`` runs
started with the variables Slurm and torchrun set (the real cluster's runs are in
tests/cluster/), shown by ``show`` and the web view, selected by ``ls --where``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.capture.scheduler import _minutes, job_context, launcher_warning
from ledger.records.run import Run

# What sbatch --array=0-3 -c 2 -t 90 sets in task 3 (Slurm 22.05 has no time variables).
SLURM_ENV = {
    "SLURM_JOB_ID": "4243",
    "SLURM_ARRAY_JOB_ID": "4240",
    "SLURM_ARRAY_TASK_ID": "3",
    "SLURM_CLUSTER_NAME": "lab",
    "SLURM_JOB_PARTITION": "gpu",
    "SLURM_JOB_NAME": "train",
    "SLURM_JOB_NODELIST": "gpu[01-02]",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_NTASKS": "8",
    "SLURM_PROCID": "5",
    "SLURM_NODEID": "1",
    "SLURM_CPUS_PER_TASK": "2",
    "SLURM_GPUS_PER_TASK": "a100:1",
    "SLURM_JOB_START_TIME": "1700000000",
    "SLURM_JOB_END_TIME": "1700005400",
    # Slurm's own secret (auth/jwt) and a user's: never read.
    "SLURM_JWT": "eyJhbGciOiJIUzI1NiJ9.secret-token-value",
    "SLURM_MY_PASSWORD": "hunter2-do-not-store",
}
TORCHRUN_ENV = {
    "MASTER_ADDR": "gpu01",
    "MASTER_PORT": "29500",
    "GROUP_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "TORCHELASTIC_RUN_ID": "exp7",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("print('loss 0.5')\n")
    init_ledger(root)
    return root


def _record(repo: Path, *argv: str, **env: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    clean = {k: "" for k in (*SLURM_ENV, *TORCHRUN_ENV)}  # none leaks in from the test's shell
    r = run_ledger("record", "--json", "--", *argv, cwd=repo, **{**clean, **env})
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"]), r


def _run(repo: Path, run_id: str) -> dict[str, object]:
    r = run_ledger("show", run_id, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout)["run"])


def test_a_run_in_a_slurm_job_records_the_job_and_its_rendezvous(repo: Path) -> None:
    run_id, _ = _record(repo, sys.executable, "train.py", **SLURM_ENV, **TORCHRUN_ENV)
    run = _run(repo, run_id)
    job = run["job"]
    assert job == {
        "scheduler": "slurm",
        "job_id": "4243",
        "array_job_id": "4240",
        "array_task_id": 3,
        "cluster": "lab",
        "partition": "gpu",
        "job_name": "train",
        "step_id": None,
        "nodes": "gpu[01-02]",
        "num_nodes": 2,
        "ntasks": 8,
        "task_rank": 5,
        "node_rank": 1,
        "cpus_per_task": 2,
        "gpus_per_task": "a100:1",
        "gpus": None,
        "time_limit_min": 90,
        "rendezvous": {
            "master_addr": "gpu01",
            "master_port": 29500,
            "node_rank": 1,
            "local_world_size": 4,
            "run_id": "exp7",
        },
    }
    assert run["schema"] == 2
    assert Run.model_validate(run).to_json() == run  # read back through its model, unchanged
    raw = b"".join(p.read_bytes() for p in (repo / ".ledger").rglob("*") if p.is_file())
    assert b"secret-token-value" not in raw and b"hunter2" not in raw
    shown = run_ledger("show", run_id, cwd=repo).stdout
    line = next(ln for ln in shown.splitlines() if ln.strip().startswith("job "))
    assert "slurm job 4243 (array 4240_3)" in line and "partition gpu" in line
    assert "limit 90 min" in line and "torchrun master gpu01:29500, node rank 1" in line


def test_outside_a_job_nothing_is_added(repo: Path) -> None:
    run_id, _ = _record(repo, sys.executable, "train.py")
    run = _run(repo, run_id)
    assert "job" not in run  # the record as before
    assert not any(
        ln.strip().startswith("job ") for ln in run_ledger("show", cwd=repo).stdout.splitlines()
    )


def test_ls_where_selects_runs_by_their_job(repo: Path) -> None:
    ids = {}
    for task in ("0", "1", "2"):
        env = {**SLURM_ENV, "SLURM_ARRAY_TASK_ID": task, "SLURM_JOB_PARTITION": f"p{task}"}
        ids[task], _ = _record(repo, sys.executable, "train.py", **env)
    plain, _ = _record(repo, sys.executable, "train.py")
    for where, want in (
        ("job.array_task_id = 1", [ids["1"]]),
        ("job.array_task_id >= 1", [ids["2"], ids["1"]]),
        ("job.partition = p2", [ids["2"]]),
        ("job.cluster = lab", [ids["2"], ids["1"], ids["0"]]),
        ("job.rendezvous.master_addr = gpu01", []),
    ):
        r = run_ledger("ls", "--where", where, "--json", cwd=repo)
        assert r.returncode == 0, r.stderr
        assert [row["run_id"] for row in json.loads(r.stdout)] == want, where
    assert plain not in run_ledger("ls", "--where", "job.job_id != 0", cwd=repo).stdout


def test_the_web_view_shows_the_job(repo: Path, tmp_path: Path) -> None:
    run_id, _ = _record(
        repo, sys.executable, "train.py", **{**SLURM_ENV, "SLURM_JOB_PARTITION": "<b>gpu</b>"}
    )
    out = tmp_path / "site"
    r = run_ledger("report", run_id, "-o", str(out), cwd=repo)
    assert r.returncode == 0, r.stderr
    page = (out / "runs" / f"{run_id}.html").read_text()
    assert '<p id="job">job slurm job 4243 (array 4240_3)' in page
    assert "partition &lt;b&gt;gpu&lt;/b&gt;" in page  # escaped, as every value


def test_recording_srun_warns_that_the_recorder_is_outside_the_job(
    repo: Path, tmp_path: Path
) -> None:
    """A program named srun (the real one is in tests/cluster/): the recorder sees only argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "srun"
    fake.write_text('#!/bin/sh\nexec "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    _, r = _record(repo, "srun", sys.executable, "train.py", PATH=path)
    assert "ledger: warning: the command starts with srun" in r.stderr
    assert "`srun ledger record -- python train.py`" in r.stderr
    _, r = _record(repo, sys.executable, "train.py")
    assert "warning" not in r.stderr


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("5", 5), ("1:00", 1), ("1:30", 2), ("2:00:00", 120), ("1-00:00:00", 1440),
        ("1-02", 1560), ("1-02:30", 1590), ("UNLIMITED", None), ("", None),
    ],
)  # fmt: skip
def test_squeue_time_limits_read_as_minutes(text: str, minutes: int | None) -> None:
    assert _minutes(text) == minutes


def test_values_are_read_by_name_capped_and_typed() -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "many", "SLURM_JOB_NODELIST": "n" * 5000}
    job = job_context({**env, "PATH": ""})
    assert job is not None
    assert job["ntasks"] is None and len(job["nodes"]) == 1000 and job["time_limit_min"] is None
    assert job_context({"MASTER_PORT": "29500"}) is None  # no rendezvous without its address
    assert launcher_warning(["/usr/bin/sbatch", "x.sh"]) is not None
    assert launcher_warning(["python", "srun.py"]) is None
