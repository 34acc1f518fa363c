"""Seeds-mode replays as submitit jobs: real `ledger record`, real `ledger replay --executor
submitit-local` (each seed a job process of submitit's local executor), real ledger."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, require_component, run_ledger, subprocess_env
from test_seed_job_graces import nfs_files_busy

from ledger.run.find import load_run
from ledger.store import Store

try:
    import submitit
except ImportError:  # pragma: no cover - the cluster extra
    submitit = None

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# The seed comes from --seed; CUDA_VISIBLE_DEVICES is printed so each job's devices show.
# KILL_JOB names a file: the first replay to claim it SIGKILLs its own recorder (the seed
# job's process), as a scheduler does to a job out of memory or on a lost node.
SEEDED = """
import argparse, os, random, signal, sys, time
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
print("devices", repr(os.environ.get("CUDA_VISIBLE_DEVICES")), "seed", a.seed, flush=True)
if os.environ.get("KILL_JOB"):
    try:
        os.rename(os.environ["KILL_JOB"], os.environ["KILL_JOB"] + ".claimed")
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(9)  # the recorder can run nothing more; this job's program goes with it
    except FileNotFoundError:
        pass
if os.environ.get("PAUSE"):
    print("ready", flush=True)
    time.sleep(600)
if os.environ.get("STALL_ONCE"):  # the first replay to claim the file stalls, naming its job
    try:
        os.rename(os.environ["STALL_ONCE"], os.environ["STALL_ONCE"] + ".claimed")
        with open(os.environ["STALL_ONCE"] + ".job", "w") as f:
            f.write(str(os.getppid()))  # the recorder: the seed job's process
        time.sleep(600)
    except FileNotFoundError:
        pass
r = random.Random(a.seed)
print(f"epoch 0 acc {0.9 + r.gauss(0, 0.01)!r}", flush=True)
if os.environ.get("RUN_NOTE"):
    print("note", os.environ["RUN_NOTE"], flush=True)
"""


# The seed comes through LEDGER_SEED_ROOT to ledger.seed() (no --seed-arg).
ROOTED = """
import random
import ledger
root = ledger.seed().root
print(f"epoch 0 acc {0.9 + random.Random(root).gauss(0, 0.01)!r}", flush=True)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    require_component(submitit, "submitit", "pip install 'ledger[cluster]'")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "seeded.py").write_text(SEEDED)
    (root / "rooted.py").write_text(ROOTED)
    (root / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def _record(repo: Path, **env: str) -> str:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--",
        sys.executable, "seeded.py", "--seed", "1",
        cwd=repo, CUDA_VISIBLE_DEVICES="7", **env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


# Seed jobs, each a process that records a replay: on a loaded machine (a mutation run
# at nice 19) that took over 120 s of wall time, so a generous limit of its own.
JOBS_TIMEOUT_S = 600


def _seeds(repo: Path, run_id: str, *more: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "4", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "submitit-local", "--json", *more,
        cwd=repo, timeout=JOBS_TIMEOUT_S, **env,
    )  # fmt: skip


def test_four_seeds_run_as_submitit_jobs_each_with_its_own_devices(
    repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    jobs = tmp_path / "jobs"
    ws = tmp_path / "ws"
    ws.mkdir()
    r = _seeds(
        repo, run_id, "-j", "2", "--job-dir", str(jobs), "--workspace-dir", str(ws),
        "--gpus-per-job", "1", "--devices", "0,1",
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["mode"] == "seeds" and len(verdict["replays"]) == 4
    assert verdict["summary"].startswith("4 of 4 seed jobs completed; seeds:")
    jobs_seen = verdict["settings"]["seed_jobs"]
    assert [j["status"] for j in jobs_seen] == ["completed"] * 4
    store = Store.open(repo / ".ledger")
    devices = []
    for j, replay_id in zip(jobs_seen, verdict["replays"], strict=True):
        assert j["run"] == replay_id
        _, rr = load_run(store, replay_id)
        assert rr.replay_of == run_id and rr.status == "succeeded"
        out = json.loads(run_ledger("log", replay_id, "--json", cwd=repo).stdout or "{}")
        text = out.get("stdout", "") if isinstance(out, dict) else ""
        if not text:
            text = run_ledger("log", replay_id, cwd=repo).stdout
        assert f"seed {j['seed']}" in text  # this job's seed, in this job's run
        devices.append(text.split("devices ", 1)[1].split()[0])
    # Two GPUs, two jobs at a time, one GPU each: never the recorded "7", never shared by
    # two running jobs (each got '0' or '1').
    assert set(devices) <= {"'0'", "'1'"}, devices
    assert list(ws.iterdir()) == []  # the jobs removed their workspaces
    assert list(jobs.iterdir()) == []  # all completed: the job folder is gone
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_a_gpu_a_job_gives_back_joins_the_gpus_still_free(repo: Path) -> None:
    """Three GPUs, two jobs at a time, one GPU each: the third seed starts when either of the
    first two ends, and takes the GPU no job had yet. A job's GPUs once replaced the free list
    instead of joining it, so GPU 2 was never used (executors.py 502 ``+=`` -> ``=``)."""
    run_id = _record(repo)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "3", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "submitit-local", "--json", "-j", "2",
        "--gpus-per-job", "1", "--devices", "0,1,2",
        cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    devices = []
    for replay_id in verdict["replays"]:
        text = run_ledger("log", replay_id, cwd=repo).stdout
        devices.append(text.split("devices ", 1)[1].split()[0])
    assert sorted(devices) == ["'0'", "'1'", "'2'"], devices


def test_a_failed_seed_job_is_reported_per_seed(repo: Path, tmp_path: Path) -> None:
    run_id = _record(repo)
    jobs = tmp_path / "jobs"
    marker = tmp_path / "kill-one-job"
    marker.write_text("")
    r = _seeds(repo, run_id, "--job-dir", str(jobs), KILL_JOB=str(marker))  # one at a time
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("3 of 4 seed jobs completed; seeds:")
    jobs_seen = verdict["settings"]["seed_jobs"]
    assert [j["status"] for j in jobs_seen] == ["failed", "completed", "completed", "completed"]
    failed = jobs_seen[0]
    assert failed["run"] is None and "without a replay run" in failed["error"]
    assert Path(failed["log"]).is_file()  # kept, with the job folder
    assert any(n.startswith("seed job 1 (seed ") for n in verdict["notes"])
    # The folder kept for the failed job's log is named, so the user can read it.
    (folder,) = [p for p in jobs.iterdir() if p.name.startswith("ledger-seed-jobs-")]
    assert f"the seed jobs' logs are kept in {folder}" in verdict["notes"]
    assert [j["run"] for j in jobs_seen[1:]] == verdict["replays"]
    # Every planned seed stays in the verdict, the failed one included.
    roots = verdict["settings"]["roots"]
    assert [j["seed"] for j in jobs_seen] == [r % 2**31 for r in roots] and len(roots) == 4
    # The killed job's recorder left its staging behind, as any SIGKILLed recorder does; it is
    # the only thing verify reports.
    from ledger.store.verify import verify_store

    problems = verify_store(Store.open(repo / ".ledger")).problems
    assert [p.kind for p in problems] == ["abandoned-staging"], problems


def test_ctrl_c_cancels_the_seed_jobs_and_leaves_the_ledger_consistent(
    repo: Path, tmp_path: Path
) -> None:
    run_id = _record(repo)
    jobs, ws = tmp_path / "jobs", tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "ledger", "replay", run_id, "--mode", "seeds", "--seeds", "4",
            "--metric", "acc", "--seed-arg=--seed", "--executor", "submitit-local", "-j", "2",
            "--job-dir", str(jobs), "--workspace-dir", str(ws),
        ],
        cwd=repo,
        env=subprocess_env(PAUSE="1"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    # Two jobs run, each program waiting in its sleep; the others wait their turn.
    deadline = time.monotonic() + JOBS_TIMEOUT_S
    while time.monotonic() < deadline:
        logs = list(jobs.glob("*/*_log.out"))
        if sum("ready" in f.read_text(errors="replace") for f in logs) >= 2:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the seed jobs did not start")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the terminal: the whole process group
    _, err = proc.communicate(timeout=JOBS_TIMEOUT_S)
    assert proc.returncode == 130, err
    text = err.decode()
    assert "2 running seed job(s) were cancelled" in text and "2 never started" in text
    assert "Traceback" not in text
    store = Store.open(repo / ".ledger")
    assert sorted(n for n, _ in store.refs.iter("verdicts/")) == []
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    assert sorted(r["status"] for r in rows) == ["interrupted", "interrupted", "succeeded"]
    assert list(ws.iterdir()) == []  # the jobs removed their workspaces
    assert list(jobs.iterdir()) == []  # and the job folder is gone
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_a_job_warned_of_its_time_limit_seals_its_run_as_timed_out(
    repo: Path, tmp_path: Path
) -> None:
    """Slurm's warning before the time limit is submitit's USR2, sent here by hand to a
    submitit-local job (tests/cluster/ has a real job reach its limit): the job stops its
    program and seals the run; the seed is reported timed-out and verify stays clean."""
    run_id = _record(repo)
    marker = tmp_path / "stall-once"
    marker.write_text("")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "ledger", "replay", run_id, "--mode", "seeds", "--seeds", "3",
            "--metric", "acc", "--seed-arg=--seed", "--executor", "submitit-local", "-j", "3",
            "--job-dir", str(tmp_path / "jobs"), "--json",
        ],
        cwd=repo, env=subprocess_env(STALL_ONCE=str(marker)), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        named = Path(f"{marker}.job")
        deadline = time.monotonic() + JOBS_TIMEOUT_S
        while not (named.exists() and named.read_text().strip()):
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail("no seed job stalled")
            time.sleep(0.2)
        os.kill(int(named.read_text()), signal.SIGUSR2)  # on the old code: submitit raised
        out, err = proc.communicate(timeout=JOBS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (0, 1), err
    verdict = json.loads(out)
    assert verdict["summary"].startswith("2 of 3 seed jobs completed; seeds:")
    jobs = verdict["settings"]["seed_jobs"]
    assert sorted(j["status"] for j in jobs) == ["completed", "completed", "timed-out"]
    stopped = next(j for j in jobs if j["status"] == "timed-out")
    assert "reached its time limit of 60 min" in stopped["error"]
    _, rr = load_run(Store.open(repo / ".ledger"), stopped["run"])
    assert rr.status == "interrupted" and rr.replay_of == run_id
    assert any(n.startswith(f"seed job {stopped['index'] + 1} (seed ") for n in verdict["notes"])
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_slurm_jobs_ask_for_partition_time_and_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sbatch script the executor of `--executor slurm` would submit for one seed job
    (tests/cluster/ runs them)."""
    require_component(submitit, "submitit", "pip install 'ledger[cluster]'")
    from ledger.replay.executors import ExecutorOptions, _executor

    # submitit's executor wants srun found before it makes a script; none is run here, and a
    # machine without Slurm (a fresh one, 7 December) has none.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text("#!/bin/sh\nexit 1\n")
    (fake / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")

    ex = ExecutorOptions(
        name="slurm", job_dir=tmp_path, partition="gpu", time_min=90, gpus_per_job=2,
        cpus_per_job=8,
    )  # fmt: skip
    ex.validate()
    executor = _executor(ex, tmp_path)
    assert isinstance(executor, submitit.SlurmExecutor)
    script = executor._make_submission_file_text("x", "0")
    for line in (
        "#SBATCH --job-name=ledger-seed",  # what squeue and sacct show
        "#SBATCH --partition=gpu",
        "#SBATCH --time=90",
        "#SBATCH --gpus-per-node=2",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        # Warned a quarter of its time before the limit, at most 5 minutes: time to seal.
        "#SBATCH --signal=USR2@300",
    ):
        assert line in script, script


def test_submitit_local_jobs_have_slurm_time_as_their_timeout(tmp_path: Path) -> None:
    """docs/reference/cli.md: --slurm-time is "also the `submitit-local` timeout"."""
    require_component(submitit, "submitit", "pip install 'ledger[cluster]'")
    from ledger.replay.executors import ExecutorOptions, _executor

    ex = ExecutorOptions(name="submitit-local", time_min=7)
    ex.validate()
    executor = _executor(ex, tmp_path)
    assert isinstance(executor, submitit.LocalExecutor)
    assert executor.parameters["timeout_min"] == 7


def test_without_submitit_the_job_executors_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """submitit is the `cluster` extra: without it the job executors are a usage error that
    names the package and how to install it, not an ImportError's traceback."""
    from ledger.errors import UsageError
    from ledger.replay import executors

    monkeypatch.setitem(sys.modules, "submitit", None)  # `import submitit` raises ImportError
    with pytest.raises(UsageError, match="need the submitit package") as e:
        executors._submitit()
    assert e.value.hint == "pip install 'ledger[cluster]'"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "slurm"], "needs --job-dir"),
        (["--executor", "submitit-local", "--gpus-per-job", "2", "--devices", "0"], "--devices"),
        (["--executor", "submitit-local", "--devices", "a,b"], "comma-separated list"),
        (["--executor", "submitit-local", "--slurm-time", "0"], "at least 1 minute"),
        (["--job-remote", "origin"], "--job-remote is for seed jobs"),
    ],
)
def test_bad_executor_options_are_usage_errors(repo: Path, args: list[str], message: str) -> None:
    run_id = _record(repo)
    r = run_ledger("replay", run_id, "--mode", "seeds", *args, cwd=repo)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_ledger("replay", run_id, "--executor", "submitit-local", cwd=repo)
    assert r.returncode == 2 and "--mode seeds" in r.stderr


def test_the_slurm_executor_without_slurm_says_what_is_missing_and_makes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    """On a machine without Slurm's commands (a laptop, a fresh CI machine), ``--executor
    slurm`` is a usage error naming the missing ones, before the job folder is made or the run
    pushed: it was submitit's RuntimeError as a failed replay (exit 7), after both."""
    require_component(submitit, "submitit", "pip install 'ledger[cluster]'")
    run_id = _record(repo)
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("sbatch", "squeue"):  # two of the four: the others are named
        (tools / name).write_text("#!/bin/sh\nexit 1\n")
        (tools / name).chmod(0o755)
    git = shutil.which("git")
    assert git is not None
    (tools / "git").symlink_to(git)  # no /usr/bin: a CI machine has Slurm's commands there
    jobs, remote = tmp_path / "jobs", tmp_path / "remote"
    assert run_ledger("remote", "add", "origin", str(remote), cwd=repo).returncode == 0
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "slurm", "--job-dir", str(jobs),
        "--job-remote", "origin", cwd=repo, PATH=str(tools),
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "not found on PATH: scancel, srun" in r.stderr and "Traceback" not in r.stderr
    assert "--executor submitit-local" in r.stderr
    assert not jobs.exists() and not remote.exists()


def test_seed_jobs_without_a_shared_ledger_go_through_a_remote(repo: Path, tmp_path: Path) -> None:
    run_id = _record(repo)
    remote = tmp_path / "remote"
    assert run_ledger("remote", "add", "origin", str(remote), cwd=repo).returncode == 0
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "submitit-local", "-j", "2", "--json",
        "--job-remote", "origin", cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("2 of 2 seed jobs completed; ")
    store = Store.open(repo / ".ledger")
    for replay_id in verdict["replays"]:  # pulled back from the remote, whole
        assert load_run(store, replay_id)[1].replay_of == run_id
    # The jobs recorded into ledgers of their own: they pushed to the remote, which a fresh
    # clone shows, and this ledger got the runs only by pulling them.
    clone = tmp_path / "clone"
    clone.mkdir()
    assert run_ledger("clone", str(remote), str(clone), cwd=tmp_path).returncode == 0
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=clone).stdout)
    assert set(verdict["replays"]) <= {row["run_id"] for row in rows}
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_seed_jobs_kept_with_keep_workspace_are_named(repo: Path, tmp_path: Path) -> None:
    """--keep-workspace keeps each seed job's workspace, and the replay says where, as it does
    for the seeds of the local pool (the jobs remove their own workspaces otherwise)."""
    run_id = _record(repo)
    ws = tmp_path / "ws"
    ws.mkdir()
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "submitit-local", "-j", "2", "--keep-workspace",
        "--workspace-dir", str(ws), cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stdout + r.stderr
    kept = [ln for ln in r.stdout.splitlines() if ln.startswith("workspace kept at ")]
    assert len(kept) == 1, r.stdout
    named = kept[0].removeprefix("workspace kept at ").split(", ")
    assert len(named) == 2 and all(Path(p).is_dir() for p in named), named
    assert sorted(named) == sorted(str(p) for p in ws.iterdir())


def test_seed_roots_reach_the_jobs_through_ledger_seed(repo: Path) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "rooted.py", cwd=repo
    )
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
        "--executor", "submitit-local", "-j", "2", "--json", cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    store = Store.open(repo / ".ledger")
    roots = verdict["settings"]["roots"]
    assert [j["seed"] for j in verdict["settings"]["seed_jobs"]] == roots
    from ledger.records.base import record_from_json
    from ledger.records.contract import Contract

    for replay_id, root in zip(verdict["replays"], roots, strict=True):
        _, rr = load_run(store, replay_id)
        contract = record_from_json(store.get_json(rr.contract), Contract)
        assert isinstance(contract, Contract) and contract.seed_root == root


def test_the_local_pool_gives_each_running_seed_its_own_gpus(repo: Path) -> None:
    run_id = _record(repo)  # recorded with CUDA_VISIBLE_DEVICES=7
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "4", "--metric", "acc",
        "--seed-arg=--seed", "-j", "2", "--gpus-per-job", "1", "--devices", "0,1", "--json",
        cwd=repo,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert "seed_jobs" not in verdict["settings"]  # the thread pool, not an executor
    seen = []
    for replay_id in verdict["replays"]:
        text = run_ledger("log", replay_id, cwd=repo).stdout
        seen.append(text.split("devices ", 1)[1].split()[0])
    assert set(seen) <= {"'0'", "'1'"} and len(seen) == 4, seen
    r = run_ledger("replay", run_id, "--mode", "seeds", "--devices", "0,1", cwd=repo)
    assert r.returncode == 2 and "--devices needs --gpus-per-job" in r.stderr


def test_parallel_local_seeds_write_whole_prefixed_lines(repo: Path) -> None:
    import re

    run_id = _record(repo)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "3", "--metric", "acc",
        "--seed-arg=--seed", "-j", "3", cwd=repo,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    program = [line for line in r.stdout.splitlines() if "devices " in line or "acc 0." in line]
    assert len(program) == 6, r.stdout
    for line in program:
        assert re.fullmatch(r"\[seed [123]\] (devices '7' seed \d+|epoch 0 acc \S+)", line), line
    for k in (1, 2, 3):
        assert sum(line.startswith(f"[seed {k}] ") for line in program) == 2
    # The runs' own logs hold the program's output as it was written, without prefixes.
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    replay_id = next(row["run_id"] for row in rows if row.get("replay_of") == run_id)
    assert run_ledger("log", replay_id, cwd=repo).stdout.startswith("devices '7' seed ")


def test_the_callers_extra_env_reaches_each_seed_job(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seed job builds its own ReplayOptions: the caller's ``extra_env`` goes with it, as it
    goes to the seeds of the local pool (a job once ran without it)."""
    from ledger.replay.engine import replay
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    # The jobs are started from this process: they import this checkout's ledger too.
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    run_id = _record(repo)
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=2,
        executor=ExecutorOptions(name="submitit-local"), extra_env={"RUN_NOTE": "from-caller"},
    )  # fmt: skip
    outcome = replay(Store.open(repo / ".ledger"), run_id, opts)
    assert len(outcome.verdict.replays) == 2, outcome.verdict.summary
    # The jobs removed their own workspaces: the outcome names none (it names kept ones only).
    assert outcome.workspaces == []
    for replay_id in outcome.verdict.replays:
        out = run_ledger("log", replay_id, cwd=repo).stdout
        assert out.endswith("note from-caller\n"), out


def test_each_seed_job_is_reported_as_it_ends(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal `ledger replay --mode seeds` prints a line per seed as it finishes (the
    CLI's ``on_seed``): with seed jobs it is called once per job, with the job's seed, its
    replay run and the metric's final value in that run."""
    from ledger.records.base import record_from_json
    from ledger.records.contract import Contract
    from ledger.replay.engine import replay
    from ledger.replay.options import ExecutorOptions, ReplayOptions
    from ledger.run.series import final_value

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    run_id = _record(repo)
    seen: list[tuple[int, int, str, float | None]] = []
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=2,
        executor=ExecutorOptions(name="submitit-local"),
        on_seed=lambda i, seed, run, value: seen.append((i, seed, run.run_id, value)),
    )  # fmt: skip
    store = Store.open(repo / ".ledger")
    outcome = replay(store, run_id, opts)
    assert sorted(i for i, *_ in seen) == [0, 1], seen
    assert {r for _, _, r, _ in seen} == set(outcome.verdict.replays)
    for _, seed, replay_id, value in seen:
        _, rr = load_run(store, replay_id)
        assert rr.replay_of == run_id and rr.contract is not None
        argv = record_from_json(store.get_json(rr.contract), Contract).argv
        assert argv[argv.index("--seed") + 1] == str(seed)  # the job's own seed
        assert value is not None and value == final_value(rr, "acc")


def test_seed_jobs_are_refused_without_a_job_executor(repo: Path) -> None:
    """run_seed_jobs is what `--executor submitit-local|slurm` runs; the local executor (the
    engine's own thread pool) and no executor are refused before any job or folder is made."""
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    for ex in (None, ExecutorOptions(name="local", job_dir=repo / "jobs")):
        opts = ReplayOptions(mode="seeds", seeds=2, metric="acc", executor=ex)
        with pytest.raises(ValueError, match="need an executor other than local"):
            run_seed_jobs(store, run, opts, [(1, 1, None), (2, 2, None)], "acc")
    assert not (repo / "jobs").exists()


def test_a_probe_that_refuses_the_first_replay_stops_the_seed_jobs(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's probe looks at each replay run as its job ends (the first replays'
    checks); when it raises, no more jobs are submitted, the job folder goes, and its error is
    what the caller gets. On a shared filesystem a file there may not go (NFS's `.nfs...` file
    for a log still held open): it is left, and the error is still the probe's."""
    from ledger.errors import ReplayError
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    jobs = tmp_path / "jobs"
    opts = ReplayOptions(
        mode="seeds", seeds=3, metric="acc", seed_arg="--seed", jobs=1,
        executor=ExecutorOptions(name="submitit-local", job_dir=jobs),
    )  # fmt: skip
    probed: list[str] = []

    def probe(_i: int, replay_run: Any) -> None:
        probed.append(replay_run.run_id)
        (folder,) = jobs.iterdir()
        (folder / ".nfs0000000000b1e5a100000003").write_bytes(b"held open")
        raise ReplayError("the seed changes nothing")

    nfs_files_busy(monkeypatch)

    plan = [(11, None, 11), (12, None, 12), (13, None, 13)]
    with pytest.raises(ReplayError, match="the seed changes nothing"):
        run_seed_jobs(store, run, opts, plan, "acc", probe=probe)
    assert len(probed) == 1
    runs = [r for r in Store.open(repo / ".ledger").ref_state_from_log() if r.startswith("runs/")]
    assert len(runs) == 2  # the run and one replay: one job at a time, the others never ran
    left = [p.name for p in jobs.rglob("*") if p.is_file()]
    assert left == [".nfs0000000000b1e5a100000003"]  # the job folder, all but what NFS holds


def test_without_submitit_seed_jobs_leave_no_folder_and_push_nothing(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usage error comes before anything is made: no job folder (none in --job-dir) and
    nothing pushed to --job-remote (the remote stays empty)."""
    from ledger.errors import UsageError
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    run_id = _record(repo)
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    remote = tmp_path / "remote"
    jobs = tmp_path / "jobs"
    ex = ExecutorOptions(name="submitit-local", job_dir=jobs, remote=str(remote))
    opts = ReplayOptions(mode="seeds", seeds=2, executor=ex)
    monkeypatch.setitem(sys.modules, "submitit", None)  # `import submitit` raises ImportError
    with pytest.raises(UsageError, match="need the submitit package"):
        run_seed_jobs(store, run, opts, [(1, None, 1), (2, None, 2)], "acc")
    assert not jobs.exists() or list(jobs.iterdir()) == []
    assert not remote.exists() or not any(p.is_file() for p in remote.rglob("*"))


def test_a_library_caller_s_bad_executor_options_are_refused_before_any_job(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_seed_jobs checks the executor options itself, as the CLI does, for a caller that
    built them: a Slurm executor without a job folder on a shared filesystem (its jobs could
    not write their results where this process reads them) is refused before any job folder
    is made or any job submitted."""
    import tempfile

    from ledger.errors import UsageError
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # where a job folder would go
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed",
        executor=ExecutorOptions(name="slurm"),
    )  # fmt: skip
    with pytest.raises(UsageError, match="needs --job-dir"):
        run_seed_jobs(store, run, opts, [(1, None, 1), (2, None, 2)], "acc")
    assert list(tmp.iterdir()) == []


def test_one_job_dir_serves_every_seeds_replay(repo: Path, tmp_path: Path) -> None:
    """--job-dir is one folder for all seeds replays (docs: $HOME/ledger-jobs): the first
    replay makes it, the folders above it included, and the next one uses it as it is."""
    run_id = _record(repo)
    jobs = tmp_path / "home" / "ledger-jobs"
    for _ in range(2):
        r = run_ledger(
            "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
            "--seed-arg=--seed", "--executor", "submitit-local", "-j", "2", "--json",
            "--job-dir", str(jobs), cwd=repo, timeout=JOBS_TIMEOUT_S,
        )  # fmt: skip
        assert r.returncode in (0, 1), r.stderr
        assert json.loads(r.stdout)["summary"].startswith("2 of 2 seed jobs completed; ")
        assert list(jobs.iterdir()) == []  # each replay's job folder went with its jobs


def test_submitit_local_jobs_are_not_looked_for_in_slurm_s_queue(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a cluster's login node `squeue` is on PATH, but a submitit-local job is a process of
    this machine, its job id a pid: slurmctld knows nothing of it ("Invalid job id"), and that
    must not make the job gone. Only Slurm jobs are looked for in Slurm's queue."""
    from ledger.replay.engine import replay
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "squeue-calls"
    squeue = bin_dir / "squeue"
    squeue.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        'echo "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n'
    )
    squeue.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    run_id = _record(repo)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=2,
        executor=ExecutorOptions(name="submitit-local"),
    )  # fmt: skip
    outcome = replay(Store.open(repo / ".ledger"), run_id, opts)
    assert outcome.verdict.summary.startswith("2 of 2 seed jobs completed; ")
    assert not calls.exists()  # squeue was never asked


def test_one_gpu_runs_the_seed_jobs_one_after_another(repo: Path) -> None:
    """--gpus-per-job 1 with --devices 0: the seed jobs take turns on the one GPU, each
    seeing only it, whatever -j allows."""
    run_id = _record(repo)  # recorded with CUDA_VISIBLE_DEVICES=7
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--metric", "acc",
        "--seed-arg=--seed", "--executor", "submitit-local", "-j", "2", "--json",
        "--gpus-per-job", "1", "--devices", "0", cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["summary"].startswith("2 of 2 seed jobs completed; ")
    for replay_id in verdict["replays"]:
        text = run_ledger("log", replay_id, cwd=repo).stdout
        assert text.split("devices ", 1)[1].split()[0] == "'0'", text


def test_each_seed_job_through_ledger_seed_is_reported_with_its_root(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --seed-arg a seed job's seed is its root (LEDGER_SEED_ROOT, read by
    ledger.seed()): that root is what the per-seed line (``on_seed``) reports."""
    from ledger.records.base import record_from_json
    from ledger.records.contract import Contract
    from ledger.replay.engine import replay
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "rooted.py", cwd=repo
    )
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    seen: list[tuple[Any, str]] = []
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", jobs=2,
        executor=ExecutorOptions(name="submitit-local"),
        on_seed=lambda i, seed, run, value: seen.append((seed, run.run_id)),
    )  # fmt: skip
    store = Store.open(repo / ".ledger")
    outcome = replay(store, run_id, opts)
    assert sorted(r for _, r in seen) == sorted(outcome.verdict.replays), seen
    for seed, replay_id in seen:
        _, rr = load_run(store, replay_id)
        contract = record_from_json(store.get_json(rr.contract), Contract)
        assert isinstance(seed, int) and seed == contract.seed_root


def test_a_job_folder_nfs_holds_a_file_of_does_not_fail_the_seeds(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every seed job completed: their folder goes, except a file a shared filesystem will
    not let go yet (NFS's `.nfs...` file for a log still held open); the seeds' runs are the
    result all the same."""
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    jobs = tmp_path / "jobs"
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=2,
        executor=ExecutorOptions(name="submitit-local", job_dir=jobs),
    )  # fmt: skip

    def held(_i: int, _seed: int, _run: Any, _value: float | None) -> None:
        (folder,) = jobs.iterdir()
        (folder / ".nfs0000000000b1e5a100000004").write_bytes(b"held open")

    nfs_files_busy(monkeypatch)
    done = run_seed_jobs(store, run, opts, [(11, None, 11), (12, None, 12)], "acc", held)
    assert [o.status for o in done.outcomes] == ["completed", "completed"]
    assert done.folder is None  # nothing of it to read: the logs went
    left = [p.name for p in jobs.rglob("*") if p.is_file()]
    assert left == [".nfs0000000000b1e5a100000004"]


@pytest.mark.parametrize("seed_arg", [True, False], ids=["seed-arg", "ledger-seed"])
def test_a_job_deadline_that_passes_cancels_the_jobs_and_names_each_seed(
    repo: Path, tmp_path: Path, seed_arg: bool
) -> None:
    """--job-deadline: the jobs that have not ended by then are cancelled, the seeds not yet
    submitted never are, and each is named with its seed (--seed-values), in the error that
    says no verdict was stored (its first four seeds), the logs kept."""
    if seed_arg:
        run_id = _record(repo)
        more = ["--seed-arg=--seed"]
    else:
        r = run_ledger(
            "record", "--metric", METRIC, "--json", "--", sys.executable, "rooted.py", cwd=repo
        )
        assert r.returncode == 0, r.stderr
        run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
        more = []
    jobs = tmp_path / "jobs"
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seed-values", "11,12,13,14,15", "--metric",
        "acc", "--executor", "submitit-local", "--job-dir", str(jobs), "--job-deadline",
        "0.001", *more, cwd=repo, timeout=JOBS_TIMEOUT_S,
    )  # fmt: skip
    assert r.returncode == 7, r.stderr
    (folder,) = jobs.iterdir()
    assert "only 0 of 5 seed jobs completed; no verdict was stored: " in r.stderr
    assert f"the job logs are kept in {folder}" in r.stderr
    what = "--job-deadline 0.001 min"
    first = f"seed job 1 (seed 11) failed: the job had not ended at {what} and was cancelled"
    assert first in r.stderr
    for k in (2, 3, 4):
        assert f"seed job {k} (seed {k + 10}) failed: never submitted: {what} passed first" in (
            r.stderr
        )
    assert "seed job 5" not in r.stderr  # the first four
    (log,) = folder.glob("*_log.err")  # the one job submitted: cancelled, its process ended
    with pytest.raises(ProcessLookupError):
        os.kill(int(log.name.split("_")[0]), 0)  # a local job's id is its process id


def test_ctrl_c_as_a_seed_is_reported_leaves_no_job_folder_but_what_nfs_holds(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C can come while the CLI prints a seed's line (``on_seed``): the seeds replay is
    interrupted as at any other moment, its job folder removed, all but a file a shared
    filesystem holds (NFS's `.nfs...` file for a log still open), and the error is still the
    interruption's."""
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions
    from ledger.replay.single import ReplayInterrupted

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    jobs = tmp_path / "jobs"
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=1,
        executor=ExecutorOptions(name="submitit-local", job_dir=jobs),
    )  # fmt: skip

    def ctrl_c(_i: int, _seed: int, _run: Any, _value: float | None) -> None:
        (folder,) = jobs.iterdir()
        (folder / ".nfs0000000000b1e5a100000005").write_bytes(b"held open")
        raise KeyboardInterrupt

    nfs_files_busy(monkeypatch)
    with pytest.raises(ReplayInterrupted, match="interrupted by signal 2: 0 running seed job"):
        run_seed_jobs(store, run, opts, [(11, None, 11), (12, None, 12)], "acc", ctrl_c)
    left = [p.name for p in jobs.rglob("*") if p.is_file()]
    assert left == [".nfs0000000000b1e5a100000005"]


def test_a_probe_that_refuses_a_replay_cancels_the_jobs_still_running(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the engine's probe refuses the first replay to end, the other jobs are not left
    running: each is cancelled and seals its replay run as interrupted before the error is
    raised."""
    from ledger.errors import ReplayError
    from ledger.replay.executors import run_seed_jobs
    from ledger.replay.options import ExecutorOptions, ReplayOptions

    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    marker = tmp_path / "stall-once"
    marker.write_text("")
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, _record(repo))
    monkeypatch.setenv("STALL_ONCE", str(marker))  # one job's program sleeps: still running
    opts = ReplayOptions(
        mode="seeds", seeds=2, metric="acc", seed_arg="--seed", jobs=2,
        executor=ExecutorOptions(name="submitit-local", job_dir=tmp_path / "jobs"),
    )  # fmt: skip

    def probe(_i: int, _run: Any) -> None:
        raise ReplayError("the seed changes nothing")

    try:
        with pytest.raises(ReplayError, match="the seed changes nothing"):
            run_seed_jobs(store, run, opts, [(11, None, 11), (12, None, 12)], "acc", probe=probe)
        rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
        # the run, the replay the probe refused, the one cancelled
        assert sorted(r["status"] for r in rows) == ["interrupted", "succeeded", "succeeded"]
    finally:  # a job left running (the code under test failed) is stopped as a cancel would
        stalled = Path(f"{marker}.job")
        if stalled.exists() and stalled.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stalled.read_text()), signal.SIGTERM)
