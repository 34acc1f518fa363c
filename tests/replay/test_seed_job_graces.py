"""How seed jobs stop, as docs/how-to/cluster-seeds.md states it. On a fake clock: a cancelled job
that does not seal its run is killed after at most a minute, and a Slurm job that had started and
left the queue is given 30 seconds for its result file (neither test waits: the clock moves only
when the code sleeps or the test moves it). A job process (its replay stood in for) cancelled before
or after its workspace exists, the parent's wait ended by SIGTERM or SIGHUP, Ctrl-C ignored only
while a job is submitted, and how long before its time limit a Slurm job is warned. A job without a
shared ledger removes its private one; a job's replay step refuses an imported run, and reports a
stopped replay as timed-out only after the time-limit warning. A file that cannot be removed (NFS's
`.nfs...` file), in a private ledger or a replay workspace, fails neither the job nor its seed. In
the parent: past the default deadline a seed never submitted names it; a job without a result is
reported with the end of its log; a job's result is checked before its run is taken as the seed's;
a job's pid file is read only as a process of its own."""

from __future__ import annotations

import dataclasses
import errno
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_slurm_queue import Clock, _squeue

from ledger.errors import ReplayError
from ledger.records.run import Imported, Run
from ledger.replay import executors, single, slurm_queue
from ledger.replay.single import ReplayInterrupted
from ledger.replay.slurm_queue import QueueWatch
from ledger.run.ids import run_ref
from ledger.store import Store

# A job program that ignores SIGTERM, as a job stuck past its cancel does.
DEAF = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


class FakeTime:
    """``time`` as executors sees it: ``sleep`` moves the clock instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class LocalJob:
    """What _cancel reads of a submitit local job: its process, and whether it is done."""

    def __init__(self, process: subprocess.Popen[str], clock: FakeTime) -> None:
        self._process = process
        self._clock = clock
        self.killed_at: float | None = None
        real_kill = process.kill

        def kill() -> None:
            self.killed_at = clock.now
            real_kill()

        process.kill = kill  # type: ignore[method-assign]

    def done(self) -> bool:
        return self._process.poll() is not None


def test_a_cancelled_job_that_does_not_seal_its_run_is_killed_after_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeTime()
    monkeypatch.setattr(executors, "time", clock)
    real_kill = os.kill
    sent: list[float] = []  # when the job was sent SIGTERM, on the clock _cancel reads

    def kill(pid: int, signum: int) -> None:
        if signum == signal.SIGTERM:
            sent.append(clock.now)
        real_kill(pid, signum)

    monkeypatch.setattr(executors.os, "kill", kill)
    with subprocess.Popen(
        [sys.executable, "-c", DEAF], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            (tmp_path / "seed-0.pid").write_text(str(proc.pid))
            job = LocalJob(proc, clock)
            start = clock.now
            executors._cancel(
                [job], tmp_path, [0], signal.SIGTERM, executors._Ended(False, tmp_path)
            )
            assert proc.wait(timeout=60) == -signal.SIGKILL  # SIGTERM each second, then KILL
            assert job.killed_at is not None
            assert 60.0 <= job.killed_at - start <= 60.5  # "at most a minute"
            # Once a second, not at each 0.2 s poll (executors.py 631: `- last` -> `+ last`
            # signalled at every poll): 60 in the minute.
            assert len(sent) == 60 and sent[0] == start, sent[:5]
            assert all(b - a >= 1.0 for a, b in itertools.pairwise(sent)), sent[:5]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class CancelledSlurmJob:
    """What _cancel reads of a Slurm job (no ``_process``): scancel through ``cancel``, and
    whether it is done, which it is 2 s after its first scancel. A scancel of a job that has
    just left the queue fails, and submitit raises for it when asked to ``check``."""

    def __init__(self, clock: FakeTime, gone: bool = False, stays: bool = False) -> None:
        self.clock, self.gone, self.stays = clock, gone, stays  # stays: never done
        self.scancels: list[float] = []

    def cancel(self, check: bool = True) -> None:
        self.scancels.append(self.clock.now)
        if self.gone and check:
            raise subprocess.CalledProcessError(1, ["scancel"], "Invalid job id specified")

    def done(self) -> bool:
        if self.stays:
            return False
        return bool(self.scancels) and self.clock.now >= self.scancels[0] + 2.0


def test_each_slurm_job_is_cancelled_once_and_all_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Slurm jobs running at the cancel, one of them just gone from the queue: each gets
    one scancel, both at the first round, and the failed scancel of the one gone stops
    nothing (executors.py 638-640: ``check=False``, ``cancelled.add(i)``, ``continue``)."""
    clock = FakeTime()
    monkeypatch.setattr(executors, "time", clock)
    jobs = [CancelledSlurmJob(clock, gone=True), CancelledSlurmJob(clock)]
    start = clock.now
    executors._cancel(jobs, tmp_path, [0, 1], signal.SIGTERM, executors._Ended(False, tmp_path))
    assert [j.scancels for j in jobs] == [[start], [start]]
    assert clock.now - start < 3.0  # over once both are done, 2 s after their scancel


def test_a_slurm_job_still_there_after_the_grace_gets_a_second_scancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Slurm job not over a minute after its scancel (a lost request, a node slow to kill
    it) is cancelled once more as the grace ends, and a failing second scancel (the job left
    the queue meanwhile) stops nothing (executors.py 673: the call, and ``check=False``)."""
    clock = FakeTime()
    monkeypatch.setattr(executors, "time", clock)
    jobs = [CancelledSlurmJob(clock, stays=True), CancelledSlurmJob(clock, gone=True, stays=True)]
    start = clock.now
    executors._cancel(jobs, tmp_path, [0, 1], signal.SIGTERM, executors._Ended(False, tmp_path))
    for job in jobs:
        assert len(job.scancels) == 2 and job.scancels[0] == start
        assert job.scancels[1] >= start + executors._CANCEL_GRACE_S


class SlurmJob:
    def __init__(self, job_id: str) -> None:
        self.job_id = job_id


def test_a_started_slurm_job_gone_from_the_queue_has_30_seconds_for_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _squeue(tmp_path, "11|CANCELLED\n12|CANCELLED\n")
    clock = Clock()
    watch = QueueWatch(env=env, clock=clock)
    monkeypatch.setattr(slurm_queue, "QueueWatch", lambda: watch)
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "seed-0.pid").write_text("4242")  # seed 0's job started; seed 1's never did
    ended = executors._Ended(True, folder)
    handles: dict[int, Any] = {0: SlurmJob("11"), 1: SlurmJob("12")}
    assert ended.left(handles) == {1: "CANCELLED"}  # never started: no result can come
    clock.now += 29.5
    assert ended.left(handles) == {1: "CANCELLED"}  # started: its result may still arrive
    clock.now += 1.0
    assert ended.left(handles) == {0: "CANCELLED", 1: "CANCELLED"}  # 30 s passed: gone


# A seed job (SeedJob, in its own process as submitit runs it) whose replay is stood in for:
# it reads what its stdin holds, and the cancel's SIGTERM comes before its workspace exists, or
# after (MADE_FIRST). SIGTERM is passed over first, as submitit's handler does in its jobs.
JOB = """
import os, signal, sys
from ledger.replay import executors

def replay(self, store, made, warned):
    stdin = os.read(0, 100).decode()
    if os.environ.get("MADE_FIRST"):
        made.append(sys.argv[2])  # the workspace exists: the recorder forwards the signal
    os.kill(os.getpid(), signal.SIGTERM)
    return {"run": "r-1", "notes": [stdin]}

signal.signal(signal.SIGTERM, lambda signum, frame: None)
executors.SeedJob._replay = replay
executors.SeedJob(
    ledger=sys.argv[1], run_id="r", index=0, seed_root=1, seed_value=None, seed_arg=None,
    keep_workspace=True, workspace_parent=None, include_logs=False, folder=sys.argv[2],
)()
"""


def _job(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run JOB with its stdin a pipe that holds a line, as a terminal would: its result and
    its job folder."""
    from _support import subprocess_env

    from ledger.store import Store

    Store.init(tmp_path / ".ledger")
    folder = tmp_path / "jobs"
    folder.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", JOB, str(tmp_path / ".ledger"), str(folder)],
        env=subprocess_env(**env), input="typed at the terminal\n", capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    # The job named its process, which the parent's cancel signals (_cancel reads it).
    assert (folder / "seed-0.pid").read_text().isdigit()
    return r, folder


def test_a_job_cancelled_before_its_workspace_exists_stops_there(tmp_path: Path) -> None:
    r, folder = _job(tmp_path)
    # Nothing recorded yet: the job ends at once, with no result for the parent.
    assert r.returncode != 0 and "_Stopped" in r.stderr, r.stderr
    assert not (folder / "seed-0.json").exists()


def test_a_job_cancelled_once_its_program_ran_seals_its_run_and_reads_no_terminal(
    tmp_path: Path,
) -> None:
    r, folder = _job(tmp_path, MADE_FIRST="1")
    # A signal once the program ran must not break the sealing of its run: the result is
    # written, and the job's log names it.
    assert r.returncode == 0, r.stderr
    result = json.loads((folder / "seed-0.json").read_text())
    assert result["run"] == "r-1"
    assert r.stderr.endswith("ledger: seed job 1: replay run r-1\n")
    assert result["notes"] == [""]  # stdin is /dev/null, not what the terminal held


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_stops_the_wait_for_seed_jobs_as_ctrl_c_does(sig: int) -> None:
    """``kill`` of the parent ends its wait for the jobs, which it then cancels (as Ctrl-C
    does); after the wait the handler it found is back."""
    seen: list[int] = []
    original = signal.getsignal(sig)
    signal.signal(sig, lambda signum, _frame: seen.append(signum))
    found = signal.getsignal(sig)
    try:
        with pytest.raises(executors._Stopped) as stopped, executors._stop_signals():
            os.kill(os.getpid(), sig)
            deadline = time.monotonic() + 10  # a signal to itself comes at once
            while time.monotonic() < deadline:
                time.sleep(0.05)
        assert stopped.value.signum == sig
        assert seen == [] and signal.getsignal(sig) is found
    finally:
        signal.signal(sig, original)


def test_ctrl_c_is_ignored_only_while_a_job_is_submitted() -> None:
    """submitit-local's job controller is started with SIGINT ignored (Ctrl-C at the terminal
    must not reach it); the process that submitted it gets its own Ctrl-C handler back. From a
    thread that is not the main one (where no handler can be set) it changes nothing."""
    original = signal.getsignal(signal.SIGINT)
    with executors._sigint_ignored():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is original
    failed: list[BaseException] = []

    def submit() -> None:
        try:
            with executors._sigint_ignored():
                pass
        except BaseException as e:  # reported below
            failed.append(e)

    thread = threading.Thread(target=submit)
    thread.start()
    thread.join(timeout=60)
    assert failed == [] and signal.getsignal(signal.SIGINT) is original


def test_a_seed_job_is_warned_a_quarter_of_its_time_before_its_limit() -> None:
    """Slurm's warning (``--signal=USR2@N``): a quarter of --slurm-time, at most 5 minutes
    (docs/how-to/cluster-seeds.md); a 1-minute job is warned 15 s before its limit."""
    assert [executors.signal_delay(m) for m in (1, 10, 20, 60, 120)] == [15, 150, 300, 300, 300]


def _recorded(tmp_path: Path) -> tuple[Path, str]:
    """A git project with a ledger and one run recorded by `ledger record`: (project, run id)."""
    from _support import init_ledger, run_ledger

    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("print('epoch 0 acc 0.9', flush=True)\n")
    (root / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", cwd=root)
    assert r.returncode == 0, r.stderr
    return root, str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _seed_job(run_id: str, ledger: Path, folder: Path) -> executors.SeedJob:
    return executors.SeedJob(
        ledger=str(ledger), run_id=run_id, index=0, seed_root=1, seed_value=None, seed_arg=None,
        keep_workspace=True, workspace_parent=None, include_logs=False, folder=str(folder),
    )  # fmt: skip


# A seed job with --job-remote (no shared ledger), in its own process: its replay is stood in
# for by one that notes where the private ledger is and reads the run pulled into it. With BUSY
# set it also leaves there a file that cannot be removed: what NFS makes of a file removed while
# still open (a `.nfs...` file, EBUSY until whatever holds it open ends).
REMOTE_JOB = """
import errno, os, sys
from pathlib import Path
from ledger.replay import executors
from ledger.run.find import load_run

def replay(self, store, made, warned):
    Path(sys.argv[3]).write_text(str(store.root))
    if os.environ.get("BUSY"):
        (store.root / ".nfs0000000000b1e5a100000001").write_bytes(b"held open")
    return {"run": load_run(store, self.run_id)[1].run_id, "notes": []}

real_unlink = os.unlink

def unlink(path, *args, **kwargs):
    if os.path.basename(path).startswith(".nfs"):
        raise OSError(errno.EBUSY, "Device or resource busy", path)
    real_unlink(path, *args, **kwargs)

os.unlink = unlink

executors.SeedJob._replay = replay
executors.SeedJob(
    ledger="", run_id=sys.argv[1], index=0, seed_root=1, seed_value=None, seed_arg=None,
    keep_workspace=False, workspace_parent=None, include_logs=False, folder=sys.argv[2],
    remote_url=sys.argv[4],
)()
"""


def _remote_job(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    """Run REMOTE_JOB on a run pushed to a path remote, with a temporary directory of its own:
    its result, the run's id, and that temporary directory."""
    from _support import run_ledger, subprocess_env

    repo, run_id = _recorded(tmp_path)
    remote = tmp_path / "remote"
    r = run_ledger("push", str(remote), run_id, cwd=repo)
    assert r.returncode == 0, r.stderr
    temp = tmp_path / "job-tmp"  # the job's temporary directory
    temp.mkdir()
    folder = tmp_path / "jobs"
    folder.mkdir()
    noted = tmp_path / "private-ledger"
    r = subprocess.run(
        [sys.executable, "-c", REMOTE_JOB, run_id, str(folder), str(noted), str(remote)],
        env=subprocess_env(TMPDIR=str(temp), **env), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads((folder / "seed-0.json").read_text())["run"] == run_id
    private = Path(noted.read_text())
    assert private.parent.parent == temp  # the run was pulled into a ledger there
    return r, run_id, temp


def test_a_job_without_a_shared_ledger_removes_its_private_ledger(tmp_path: Path) -> None:
    """docs/how-to/cluster-seeds.md: each job "creates a private ledger in its temporary
    directory, pulls the run from the remote, replays its seed there, pushes its replay run back
    and removes the private ledger"."""
    _, _, temp = _remote_job(tmp_path)
    assert list(temp.iterdir()) == []  # nothing of the private ledger is left


def test_a_private_ledger_that_cannot_all_be_removed_does_not_fail_the_job(
    tmp_path: Path,
) -> None:
    """A file left in the private ledger that cannot be removed (NFS's `.nfs...` file for one
    still held open) stays in the job's temporary directory; the job, whose replay run was
    pushed and whose result was written, still ends as a job that did its work (exit 0, so
    Slurm reports it COMPLETED), its log ending on that run, not on a traceback."""
    r, run_id, temp = _remote_job(tmp_path, BUSY="1")
    assert r.stderr.endswith(f"ledger: seed job 1: replay run {run_id}\n"), r.stderr
    left = [p.name for p in temp.rglob("*") if p.is_file()]
    assert left == [".nfs0000000000b1e5a100000001"]  # only what could not be removed


def _imported_run(store: Store) -> Run:
    """A run imported from an MLflow store (no contract), stored under its run ref."""
    run = Run(
        schema_version=2,  # type: ignore[call-arg]  # the field is aliased to "schema"
        run_id="20261130T000000.000000Z-0b5619de", status="succeeded",
        started=datetime(2026, 11, 30, tzinfo=UTC), host="", pid=0, contract=None,
        contract_digest=None, ledger_version="0",
        imported=Imported(
            source="mlflow", tracking_uri="file:///m/mlruns", experiment_id="1",
            experiment="e", run_id="0b5619de7d8442cf8e54a381d0676186", status="FINISHED",
        ),
    )  # fmt: skip
    oid = store.put_json(run.to_json())
    store.set_ref(run_ref(run.run_id), oid, op="import", origin="mlflow:file:///m/mlruns")
    return run


def test_a_seed_job_given_an_imported_run_refuses_it_by_name(tmp_path: Path) -> None:
    """`ledger replay` refuses an imported run before any job starts; a job handed one anyway
    (its job folder written by something else) says so instead of failing on the missing
    contract."""
    store = Store.init(tmp_path / ".ledger")
    run = _imported_run(store)
    job = _seed_job(run.run_id, store.root, tmp_path)
    with pytest.raises(ReplayError, match=f"run {run.run_id} was imported: it has no contract"):
        job._replay(store, [], [])


def test_a_stopped_replay_is_timed_out_only_after_the_time_limit_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel (SIGTERM, no warning) ends the job with its replay interrupted: the seed is
    reported cancelled, not timed-out. After Slurm's warning the run it sealed is the job's
    result, marked as stopped at the time limit; with no run sealed there is nothing to report."""
    repo, run_id = _recorded(tmp_path)
    store = Store.open(repo / ".ledger")
    sealed: list[str | None] = ["r-1"]

    def interrupted(*_args: object, **_kw: object) -> None:
        raise ReplayInterrupted(signal.SIGTERM, "replay interrupted", run_id=sealed[0])

    monkeypatch.setattr(single, "_one_replay", interrupted)
    job = _seed_job(run_id, store.root, tmp_path)
    with pytest.raises(ReplayInterrupted):  # cancelled
        job._replay(store, [], [])
    warned = [int(signal.SIGUSR2)]
    assert job._replay(store, [], warned) == {"run": "r-1", "stopped": "time-limit", "notes": []}
    sealed[0] = None  # warned, but stopped before its run was sealed
    with pytest.raises(ReplayInterrupted):
        job._replay(store, [], warned)


def test_a_seed_whose_program_failed_is_no_time_limit_without_the_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/how-to/cluster-seeds.md: "A seed whose *program* fails is not a failed job: its
    replay run is recorded as failed" (a completed seed); only after Slurm's warning is a run
    that did not succeed the time limit's."""
    repo, run_id = _recorded(tmp_path)
    store = Store.open(repo / ".ledger")
    from ledger.run.find import load_run

    ran = load_run(store, run_id)[1].model_copy(update={"status": "failed"})

    ws = SimpleNamespace(root=tmp_path / "ws", notes=["a note"])  # the replay's workspace
    monkeypatch.setattr(single, "_one_replay", lambda *_a, **_k: (ran, ws))
    job = _seed_job(run_id, store.root, tmp_path)
    done = job._replay(store, [], [])
    assert done == {"run": run_id, "workspace": str(tmp_path / "ws"), "notes": ["a note"]}
    warned = [int(signal.SIGUSR2)]
    done = job._replay(store, [], warned)
    assert done == {"run": run_id, "stopped": "time-limit", "notes": ["a note"]}


def test_a_workspace_that_cannot_all_be_removed_does_not_lose_the_seed_s_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --keep-workspace the job removes its replay workspace once the replay ended. A
    file there that cannot be removed (NFS's `.nfs...` file for one the program left open in a
    process of its own) stays, with its folder; the rest goes, and the seed's run is still the
    job's result."""
    repo, run_id = _recorded(tmp_path)
    store = Store.open(repo / ".ledger")
    from ledger.run.find import load_run

    ran = load_run(store, run_id)[1]
    root = tmp_path / "ws"

    def one_replay(*args: Any) -> tuple[Run, SimpleNamespace]:
        made = args[7]
        root.mkdir()
        made.append(root)  # as _one_replay does once the workspace exists
        (root / "run" / "ckpt").mkdir(parents=True)
        (root / "run" / "ckpt" / "last.pt").write_bytes(b"weights")
        (root / "run" / ".nfs0000000000b1e5a100000002").write_bytes(b"held open")
        return ran, SimpleNamespace(root=root, notes=[])

    monkeypatch.setattr(single, "_one_replay", one_replay)
    nfs_files_busy(monkeypatch)
    job = dataclasses.replace(_seed_job(run_id, store.root, tmp_path), keep_workspace=False)
    done = job._replay(store, [], [])
    assert done["run"] == run_id
    left = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    assert left == ["run/.nfs0000000000b1e5a100000002"]  # only what could not be removed


def nfs_files_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.unlink`` of an NFS ``.nfs*`` file (one a process still holds open) fails with
    EBUSY, as on NFS; every other file is removed as usual."""
    real_unlink = os.unlink

    def unlink(path: str, *args: Any, **kwargs: Any) -> None:
        if os.path.basename(path).startswith(".nfs"):
            raise OSError(errno.EBUSY, "Device or resource busy", path)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)


def test_past_the_default_deadline_a_seed_never_submitted_names_it_in_minutes(
    tmp_path: Path,
) -> None:
    """Without --job-deadline the seed jobs are waited for each wave's --slurm-time and a day
    of queueing (ExecutorOptions.deadline_s); a seed still waiting to be submitted when that
    has passed says so, the deadline in minutes."""
    from ledger.replay.options import ExecutorOptions

    ex = ExecutorOptions(name="slurm", job_dir=tmp_path, time_min=60)
    plan = [(11, 11, None), (12, 12, None), (13, 13, None), (14, 14, None)]
    waited = ex.deadline_s(len(plan), 2)  # two waves of 60 min, and a day: 1560 min
    outcomes: dict[int, executors.SeedOutcome] = {}
    executors._past_deadline(
        ex, waited, plan, {}, [(3, plan[3])], outcomes, tmp_path,
        executors._Ended(False, tmp_path),
    )  # fmt: skip
    assert outcomes[3].seed == 14
    assert outcomes[3].error == "never submitted: the default deadline (1560 min) passed first"


def test_the_deadline_takes_over_the_running_and_pending_seeds(tmp_path: Path) -> None:
    """Past the deadline the running seeds are cancelled and the pending ones never submitted:
    each becomes an outcome, and none is left running or pending, for the wait loop to collect
    again or for a Ctrl-C that lands before it ends to cancel a second time and count as
    running (executors.py 599-600: ``running.clear()``, ``pending.clear()``)."""
    from ledger.replay.options import ExecutorOptions

    ex = ExecutorOptions(name="submitit-local", deadline_min=0.5)
    plan = [(11, 11, None), (12, 12, None), (13, 13, None)]
    ended = _handle(tmp_path / "0_log.err", done=lambda: True)  # cancelled, sealed
    running: dict[int, tuple[Any, list[int]]] = {0: (ended, [])}
    pending = [(1, plan[1]), (2, plan[2])]
    outcomes: dict[int, executors.SeedOutcome] = {}
    executors._past_deadline(
        ex, 30.0, plan, running, pending, outcomes, tmp_path, executors._Ended(False, tmp_path)
    )
    assert (running, pending) == ({}, [])
    assert [outcomes[i].error for i in (0, 1, 2)] == [
        "the job had not ended at --job-deadline 0.5 min and was cancelled",
        "never submitted: --job-deadline 0.5 min passed first",
        "never submitted: --job-deadline 0.5 min passed first",
    ]


def _handle(log: Path, **fields: object) -> SimpleNamespace:
    """What _collect reads of a submitit job: its log, its state, its id; a local job also
    has its process."""
    return SimpleNamespace(paths=SimpleNamespace(stderr=str(log)), **fields)


def test_a_job_without_a_result_is_reported_with_the_end_of_its_log(tmp_path: Path) -> None:
    """A job that wrote no result (seed-N.json) is a failed seed whose error says how the job
    ended and quotes the last three lines of its log (at most 400 characters); a Slurm job
    says how it left the queue, or that it never started when it has no log."""
    folder = tmp_path / "jobs"
    folder.mkdir()
    run = SimpleNamespace(run_id="r-0")
    log = folder / "4242_0_log.err"
    log.write_text("starting\n\n  one  \ntwo\n" + "x" * 500 + "\n\n")
    local = _handle(log, _process=object(), state="FAILED", job_id="4242")
    o = executors._collect(None, run, 0, (5, None, 5), local, folder)  # type: ignore[arg-type]
    assert (o.run, o.seed, o.log, o.status) == (None, 5, log, "failed")
    tail = " | ".join(["one", "two", "x" * 500])[-400:]
    assert o.error == f"the job ended (FAILED) without a replay run: {tail}"
    log.write_text("a\nb\nc\nd\n")
    o = executors._collect(None, run, 0, (5, None, 5), local, folder)  # type: ignore[arg-type]
    assert o.error == "the job ended (FAILED) without a replay run: b | c | d"
    log.write_text("\n \n")
    o = executors._collect(None, run, 0, (5, None, 5), local, folder)  # type: ignore[arg-type]
    assert o.error == "the job ended (FAILED) without a replay run: empty log"
    log.unlink()
    o = executors._collect(None, run, 0, (5, None, 5), local, folder)  # type: ignore[arg-type]
    assert o.error == "the job ended (FAILED) without a replay run: no log"
    slurm = _handle(log, state="CANCELLED", job_id="77")  # no process of this machine
    o = executors._collect(None, run, 0, (5, None, 5), slurm, folder)  # type: ignore[arg-type]
    assert o.error == "Slurm job 77 left the queue (CANCELLED) without a result: it never started"
    log.write_text("srun: error: node lost\n")
    o = executors._collect(
        None,
        run,
        0,
        (5, None, 5),
        slurm,
        folder,
        left_queue="NODE_FAIL",  # type: ignore[arg-type]
    )
    assert o.error == (
        "Slurm job 77 left the queue (NODE_FAIL) without a result: srun: error: node lost"
    )


def test_a_job_s_result_counts_only_when_it_names_this_seed_s_replay(tmp_path: Path) -> None:
    """A job's result file only names a run: before that run is taken as the seed's, it must
    be a run id, be in the ledger, be a replay (not an imported run), of this run, with this
    seed. Anything else is a failed seed that says which check failed."""
    from _support import run_ledger

    from ledger.run.find import load_run

    repo, run_id = _recorded(tmp_path)
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", "--seed", "5", cwd=repo)
    assert r.returncode == 0, r.stderr
    other = str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])  # seeded, no replay
    store = Store.open(repo / ".ledger")
    imported = _imported_run(store)
    _, run = load_run(store, run_id)
    folder = tmp_path / "jobs"
    folder.mkdir()
    job = _handle(folder / "1_0_log.err", _process=object(), state="DONE", job_id="1")

    def error(result: object) -> str | None:
        (folder / "seed-0.json").write_text(json.dumps(result))
        o = executors._collect(store, run, 0, (5, None, 5), job, folder)
        assert o.run is None and o.workspace is None and o.status == "failed"
        return o.error

    assert error({"run": "../../.ledger"}) == "the job's result names no run"
    assert error({"run": 7}) == "the job's result names no run"
    missing = "20261130T000000.000000Z-0badc0de"
    assert str(error({"run": missing})).startswith(f"the job's run {missing} is not in the ledger")
    assert error({"run": imported.run_id}) == (
        f"the job's run {imported.run_id} is not in the ledger: run {imported.run_id} is an "
        "imported run, not a replay"
    )
    assert error({"run": other}) == f"run {other} is not this seed's replay of {run_id}"


def test_only_a_process_of_its_own_is_read_from_a_job_s_pid_file(tmp_path: Path) -> None:
    """_cancel signals the process a job named in seed-N.pid, and only one of its own: never 0
    (kill(0) would signal this process's whole group) nor 1 (init, or a container's first
    process); any other pid, 2 included (a job in a container of its own), is the job's."""
    pid_file = tmp_path / "seed-0.pid"
    for text, pid in [("4242\n", 4242), ("2", 2), ("1", None), ("0", None), ("-9", None)]:
        pid_file.write_text(text)
        assert executors._job_pid(tmp_path, 0) == pid, text
    for text in ("", "42x"):  # not yet written whole
        pid_file.write_text(text)
        assert executors._job_pid(tmp_path, 0) is None, text
    pid_file.unlink()  # the job has not started
    assert executors._job_pid(tmp_path, 0) is None
