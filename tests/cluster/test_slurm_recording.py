"""``ledger record`` inside real Slurm jobs on the session's one-node cluster: an array of
jobs recording into one ledger at once, each run with its job; ``srun ledger record`` for a
multi-task step; and ``ledger record -- srun`` warned about."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from _slurm import SlurmCluster
from _support import init_ledger, run_ledger, subprocess_env

TRAIN = "import sys\nprint('epoch 0 acc', 0.9 + int(sys.argv[1]) / 100)\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    init_ledger(root)
    return root


def _submit(cluster: SlurmCluster, repo: Path, *argv: str) -> str:
    import subprocess

    r = subprocess.run(
        ["sbatch", "--parsable", *argv], cwd=repo, env=subprocess_env(**cluster.env()),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().split(";")[0]


def _wait_ended(cluster: SlurmCluster, job: str, n: int) -> dict[str, str]:
    """The states of the ``n`` jobs of ``job`` (an array's tasks), once all have ended."""
    from ledger.replay.slurm_queue import ENDED_STATES

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        mine = {j: s for j, s in cluster.queue().items() if j == job or j.startswith(job + "_")}
        if len(mine) >= n and all(s in ENDED_STATES for s in mine.values()):
            return mine
        time.sleep(0.5)
    pytest.fail(f"job {job} did not end: {cluster.queue()}")


def _runs(repo: Path, *where: str) -> list[dict[str, object]]:
    args = [a for w in where for a in ("--where", w)]
    r = run_ledger("ls", "--json", *args, cwd=repo)
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout))


def _job(repo: Path, run_id: str) -> dict[str, object]:
    r = run_ledger("show", run_id, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout)["run"]["job"])


def test_an_array_of_jobs_records_into_one_ledger_at_once(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    command = f"{sys.executable} -m ledger record --name arr -- {sys.executable} train.py"
    job = _submit(
        slurm, repo, "--array=0-3", "--time=5", "--cpus-per-task=2",
        f"--output={tmp_path}/%A_%a.out", "--wrap", f"{command} $SLURM_ARRAY_TASK_ID",
    )  # fmt: skip
    states = _wait_ended(slurm, job, 4)
    logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("*.out"))
    assert set(states.values()) == {"COMPLETED"}, logs
    runs = _runs(repo)
    assert len(runs) == 4 and {r["status"] for r in runs} == {"succeeded"}, logs
    jobs = {int(str(_job(repo, str(r["run_id"]))["array_task_id"])): r["run_id"] for r in runs}
    assert sorted(jobs) == [0, 1, 2, 3]
    ctx = _job(repo, str(jobs[2]))
    assert ctx["scheduler"] == "slurm" and ctx["array_job_id"] == job
    assert ctx["cluster"] == slurm.name and ctx["partition"] == "debug"
    assert ctx["cpus_per_task"] == 2 and ctx["time_limit_min"] == 5
    assert ctx["nodes"] == "node1" and ctx["num_nodes"] == 1
    assert [r["run_id"] for r in _runs(repo, "job.array_task_id = 2")] == [jobs[2]]
    shown = run_ledger("show", str(jobs[2]), cwd=repo).stdout
    assert f"slurm job {ctx['job_id']} (array {job}_2)" in shown
    r = run_ledger("verify", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr


def test_srun_ledger_record_records_each_task(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    """The multi-task pattern of docs/how-to/cluster-seeds.md: one run per task."""
    import subprocess

    r = subprocess.run(
        [
            "srun", "--ntasks=2", "--time=5", sys.executable, "-m", "ledger", "record",
            "--name", "tasks", "--", sys.executable, "train.py", "1",
        ],
        cwd=repo, env=subprocess_env(**slurm.env()), capture_output=True, text=True,
        timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    runs = _runs(repo)
    assert len(runs) == 2
    ctx = [_job(repo, str(run["run_id"])) for run in runs]
    assert sorted(int(str(c["task_rank"])) for c in ctx) == [0, 1]
    assert {c["ntasks"] for c in ctx} == {2} and {c["step_id"] for c in ctx} == {"0"}
    assert len({c["job_id"] for c in ctx}) == 1


def test_recording_srun_warns_and_records_no_job(slurm: SlurmCluster, repo: Path) -> None:
    r = run_ledger(
        "record", "--json", "--", "srun", "--time=5", sys.executable, "train.py", "1",
        cwd=repo, **slurm.env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "ledger: warning: the command starts with srun" in r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=repo).stdout)
    assert "job" not in shown["run"]  # the recorder ran outside the job srun started
