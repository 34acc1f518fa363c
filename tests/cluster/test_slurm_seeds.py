"""Seeds-mode replays as real Slurm jobs (``--executor slurm``) on the session's one-node
cluster: the verdict, a job cancelled while pending (with and without accounting), the
overall deadline, a job that reaches its time limit, Ctrl-C, and ``--job-remote``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _slurm import SlurmCluster
from _support import init_ledger, require_component, run_ledger, subprocess_env

from ledger.run.find import load_run
from ledger.store import Store

try:
    import submitit
except ImportError:  # pragma: no cover - the cluster extra
    submitit = None

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# The seed comes from --seed. PAUSE: print "ready" and sleep (for Ctrl-C). SLEEP_ONCE names
# a file: the first replay to claim it sleeps past its job's time limit.
SEEDED = """
import argparse, os, random, sys, time
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
if os.environ.get("SLEEP_ONCE"):
    try:
        os.rename(os.environ["SLEEP_ONCE"], os.environ["SLEEP_ONCE"] + ".claimed")
        print("sleeping past the limit", flush=True)
        time.sleep(600)
    except FileNotFoundError:
        pass
if os.environ.get("PAUSE"):
    print("ready", flush=True)
    time.sleep(600)
r = random.Random(a.seed)
print(f"epoch 0 acc {0.9 + r.gauss(0, 0.01)!r}", flush=True)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    require_component(submitit, "submitit", "pip install 'ledger-repro[cluster]'")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "seeded.py").write_text(SEEDED)
    (root / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def _record(repo: Path) -> str:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "seeded.py", "--seed", "1",
        cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay_argv(run_id: str, jobs: Path, seeds: int, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "ledger", "replay", run_id, "--mode", "seeds", "--seeds",
        str(seeds), "--metric", "acc", "--seed-arg=--seed", "--executor", "slurm",
        "--job-dir", str(jobs), "-j", str(seeds), "--json", *more,
    ]  # fmt: skip


def _replay(
    cluster: SlurmCluster, repo: Path, run_id: str, jobs: Path, seeds: int, *more: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _replay_argv(run_id, jobs, seeds, *more),
        cwd=repo, env=subprocess_env(**cluster.env(), **env), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def _verify_clean(repo: Path) -> None:
    r = run_ledger("verify", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr


def test_three_seeds_run_as_slurm_jobs_with_a_verdict(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    r = _replay(slurm, repo, run_id, tmp_path / "jobs", 3)
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("3 of 3 seed jobs completed; seeds:")
    assert [j["status"] for j in verdict["settings"]["seed_jobs"]] == ["completed"] * 3
    store = Store.open(repo / ".ledger")
    for replay_id in verdict["replays"]:
        _, rr = load_run(store, replay_id)
        assert rr.replay_of == run_id and rr.status == "succeeded"
    _verify_clean(repo)


def _queued(cluster: SlurmCluster, n: int, state: str, before: set[str]) -> list[str]:
    """The ids of ``n`` jobs not in ``before`` in ``state``, polled for (generous deadline)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = [j for j, s in cluster.queue().items() if s == state and j not in before]
        if len(jobs) >= n:
            return jobs
        time.sleep(0.2)
    pytest.fail(f"{n} jobs never reached {state}: {cluster.queue()}")


def _cancel_new(cluster: SlurmCluster, before: set[str]) -> None:
    """Whatever a failed test left queued (its jobs in the held partition would stay)."""
    left = [j for j, s in cluster.queue().items() if j not in before and s == "PENDING"]
    if left:
        cluster.run("scancel", *left, check=False)


@pytest.mark.parametrize(
    "accounting",
    [
        pytest.param(False, id="no-accounting"),
        # heavy: a second cluster with slurmdbd and MariaDB, for what no-accounting checks
        # with sacct answering
        pytest.param(True, id="accounting", marks=pytest.mark.heavy),
    ],
)
def test_jobs_cancelled_while_pending_are_reported_not_waited_for(
    request: pytest.FixtureRequest, repo: Path, tmp_path: Path, accounting: bool
) -> None:
    cluster: SlurmCluster = request.getfixturevalue("slurm_accounting" if accounting else "slurm")
    run_id = _record(repo)
    before = set(cluster.queue())
    proc = subprocess.Popen(
        _replay_argv(run_id, tmp_path / "jobs", 3, "--slurm-partition", "held"),
        cwd=repo, env=subprocess_env(**cluster.env()), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        cluster.run("scancel", *_queued(cluster, 3, "PENDING", before))
        out, err = proc.communicate(timeout=120)  # on the old code: waited until killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _cancel_new(cluster, before)
    assert proc.returncode == 7, err
    assert "only 0 of 3 seed jobs completed" in err
    assert err.count(") without a result: it never started") == 3, err
    assert "left the queue (CANCELLED" in err
    assert "Traceback" not in err and out == ""
    _verify_clean(repo)


def test_the_deadline_cancels_jobs_that_never_start(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    before = set(slurm.queue())
    try:
        r = _replay(
            slurm, repo, run_id, tmp_path / "jobs", 2, "--slurm-partition", "held",
            "--job-deadline", "0.1",
        )  # fmt: skip
        assert r.returncode == 7, r.stderr
        assert r.stderr.count("had not ended at --job-deadline 0.1 min and was cancelled") == 2

        def pending() -> list[str]:
            return [j for j, s in slurm.queue().items() if j not in before and s == "PENDING"]

        deadline = time.monotonic() + 60  # scancel'd: they leave the queue
        while pending() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pending() == []
    finally:
        _cancel_new(slurm, before)
    _verify_clean(repo)


@pytest.mark.slow
@pytest.mark.heavy  # a minute or more of waiting for Slurm's time limit
def test_a_job_that_reaches_its_time_limit_seals_its_run(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    """A 1-minute limit: warned 15 s before it (slurmctld checks every 30 s), the job stops
    its program and seals the run; 60-90 s in all."""
    run_id = _record(repo)
    marker = tmp_path / "sleep-once"
    marker.write_text("")
    r = _replay(
        slurm, repo, run_id, tmp_path / "jobs", 3, "--slurm-time", "1", SLEEP_ONCE=str(marker)
    )
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("2 of 3 seed jobs completed; seeds:")
    jobs = verdict["settings"]["seed_jobs"]
    assert sorted(j["status"] for j in jobs) == ["completed", "completed", "timed-out"]
    stopped = next(j for j in jobs if j["status"] == "timed-out")
    assert "reached its time limit of 1 min" in stopped["error"]
    _, rr = load_run(Store.open(repo / ".ledger"), stopped["run"])
    assert rr.status in ("interrupted", "killed") and rr.replay_of == run_id
    assert stopped["run"] not in verdict["replays"]
    _verify_clean(repo)  # on the old code: abandoned-staging, the run still (running)


def test_ctrl_c_cancels_the_slurm_jobs_and_the_runs_are_sealed(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen(
        _replay_argv(run_id, jobs, 2),
        cwd=repo, env=subprocess_env(**slurm.env(), PAUSE="1"), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            logs = list(jobs.glob("*/*_log.out"))
            if sum("ready" in f.read_text(errors="replace") for f in logs) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the seed jobs did not start")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the terminal
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert b"2 running seed job(s) were cancelled" in err and b"Traceback" not in err
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    assert sorted(r["status"] for r in rows) == ["interrupted", "interrupted", "succeeded"]
    _verify_clean(repo)


def test_seed_jobs_replay_through_a_path_remote(
    slurm: SlurmCluster, repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    remote = tmp_path / "remote"
    r = _replay(slurm, repo, run_id, tmp_path / "jobs", 2, "--job-remote", str(remote))
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("2 of 2 seed jobs completed; seeds:")
    store = Store.open(repo / ".ledger")
    for replay_id in verdict["replays"]:  # pulled back from the remote, hashed
        assert load_run(store, replay_id)[1].replay_of == run_id
    assert (remote / "runs").exists() or any(remote.iterdir())
    _verify_clean(repo)
