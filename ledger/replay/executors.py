"""Seed replays as jobs of a scheduler: submitit's local executor, or Slurm through submitit.

``replay --mode seeds`` plans the seeds (``engine._seeds``); with an executor other than the
default thread pool, :func:`run_seed_jobs` runs each seed's replay as one job:

- the job opens the same ledger (it must be on a filesystem the job can reach), builds its own
  workspace, records its replay run there and removes the workspace (unless kept);
- each job gets its own devices: submitit-local hands out ``--devices`` ``--gpus-per-job`` at a
  time, Slurm allocates ``--gpus-per-job`` per job; the recorded ``CUDA_VISIBLE_DEVICES`` is
  replaced by the job's own, never shared;
- a job's output goes to its own log file in the job folder, never interleaved with another's;
- a job that fails is reported per seed, and the verdict says how many seeds completed;
- a Slurm job is warned :func:`signal_delay` seconds before its time limit (submitit's
  ``--signal=USR2@delay``): the job stops its program as a cancel does and seals its replay run
  as interrupted, and the seed is reported ``timed-out``;
- a Slurm job that leaves the queue without a result (cancelled while pending, a lost node) is
  seen through ``squeue`` (:mod:`.slurm_queue`), with or without accounting, and the whole wait
  ends at a deadline (``ExecutorOptions.deadline_min``): jobs still queued or running then are
  cancelled and reported per seed.

What the parent trusts: submitit pickles the job callable (:class:`SeedJob`, plain values the
parent made) into a job folder the parent created with mode 0700, and the job unpickles it. The
parent never unpickles what a job leaves behind (it never calls ``job.result()``): it reads one
JSON file naming the replay run, then loads that run from the ledger and checks that it replays
the original with this job's seed. Anything else is a failed job.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ReplayError, UsageError
from .child_env import DEVICES_ENV
from .options import EXECUTORS, ExecutorOptions, ReplayOptions

if TYPE_CHECKING:
    from ..records.run import Run
    from ..store import Store

__all__ = [
    "EXECUTORS",
    "DevicePool",
    "ExecutorOptions",
    "PrefixedLines",
    "SeedJob",
    "SeedJobs",
    "run_seed_jobs",
    "seed_output",
    "signal_delay",
    "slurm_parameters",
]

_POLL_S = 0.2
_CANCEL_GRACE_S = 60.0  # a cancelled job seals its run as interrupted within this
_RESULT_GRACE_S = 30.0  # a Slurm job that ran: its result file may reach us this late
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


@dataclass
class SeedWorkspace:
    """What the engine reads of a seed's workspace: where it was kept, and its notes."""

    root: Path
    notes: list[str] = field(default_factory=list)


@dataclass
class SeedOutcome:
    index: int
    seed: int
    run: Run | None = None
    workspace: SeedWorkspace | None = None
    error: str | None = None  # why the job gave no replay run
    log: Path | None = None
    stopped_run: str | None = None  # the run a job sealed as interrupted at its time limit

    @property
    def status(self) -> str:
        if self.run is not None:
            return "completed"
        return "timed-out" if self.stopped_run is not None else "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "seed": self.seed,
            "run": self.run.run_id if self.run is not None else self.stopped_run,
            "status": self.status,
            "error": self.error,
            "log": str(self.log) if self.log is not None else None,
        }


@dataclass
class SeedJobs:
    outcomes: list[SeedOutcome]
    folder: Path | None  # kept when a job failed, for its logs

    @property
    def completed(self) -> list[SeedOutcome]:
        return [o for o in self.outcomes if o.run is not None]

    def replays(self) -> list[tuple[Run, SeedWorkspace]]:
        return [(o.run, o.workspace) for o in self.outcomes if o.run and o.workspace]

    def notes(self) -> list[str]:
        out = [
            f"seed job {o.index + 1} (seed {o.seed}) {o.status}: {o.error}"
            + (f"; its log: {o.log}" if o.log else "")
            for o in self.outcomes
            if o.run is None
        ]
        return out


class DevicePool:
    """The local executor's GPUs (``--devices``): each running seed takes ``--gpus-per-job`` of
    them as its ``CUDA_VISIBLE_DEVICES`` and gives them back when it ends. Without devices a seed
    runs with the recorded ``CUDA_VISIBLE_DEVICES``, as the original did."""

    def __init__(self, ex: ExecutorOptions | None) -> None:
        local = ex is not None and ex.name == "local"
        self._free = list(ex.devices) if ex is not None and local else []
        self._per_job = ex.gpus_per_job if ex is not None and local else 0
        self._ready = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[dict[str, str]]:
        """The variables that give a seed its GPUs (none without ``--devices``), set over
        ``extra_env`` (replay/child_env.py)."""
        if not self._per_job:
            yield {}
            return
        with self._ready:  # more seeds running than GPUs go round: wait for a seed to end
            self._ready.wait_for(lambda: len(self._free) >= self._per_job)
            taken, self._free = self._free[: self._per_job], self._free[self._per_job :]
        try:
            yield {DEVICES_ENV: ",".join(map(str, taken))}
        finally:
            with self._ready:
                self._free += taken
                self._ready.notify_all()


class PrefixedLines:
    """A byte stream that writes whole lines, each behind ``prefix``: seeds replayed in
    parallel threads share the terminal line by line, never inside a line."""

    _lock = threading.Lock()  # one for all: a line is written whole
    _MAX_PARTIAL = 1 << 16  # a longer line without a newline is written in pieces

    def __init__(self, dest: Any, prefix: str) -> None:
        self._dest = dest
        self._prefix = prefix.encode()
        self._partial = b""

    def write(self, chunk: bytes) -> int:
        *whole, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > self._MAX_PARTIAL:
            whole.append(self._partial)
            self._partial = b""
        if whole:
            self._emit(whole)
        return len(chunk)

    def flush(self) -> None:
        pass  # lines are written as they complete

    def finish(self) -> None:
        if self._partial:
            self._emit([self._partial])
            self._partial = b""

    def _emit(self, lines: list[bytes]) -> None:
        data = b"".join(self._prefix + line + b"\n" for line in lines)
        with self._lock, suppress(OSError, ValueError):
            self._dest.write(data)
            self._dest.flush()


@contextmanager
def seed_output(index: int, opts: ReplayOptions) -> Iterator[None]:
    """With ``--jobs`` above 1, this thread's seed writes ``[seed N]``-prefixed whole lines."""
    if opts.jobs <= 1:
        yield
        return
    from ..run.execute import terminal_streams

    out = PrefixedLines(sys.stdout.buffer, f"[seed {index + 1}] ")
    err = PrefixedLines(sys.stderr.buffer, f"[seed {index + 1}] ")
    try:
        with terminal_streams(out, err):
            yield
    finally:
        out.finish()
        err.finish()


# --- the job, in its own process -----------------------------------------------------------------


class _Stopped(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


@dataclass(frozen=True)
class SeedJob:
    """One seed's replay, run in a job process. Plain values only: submitit pickles it."""

    ledger: str
    run_id: str
    index: int
    seed_root: int | None
    seed_value: int | None
    seed_arg: str | None
    keep_workspace: bool
    workspace_parent: str | None
    include_logs: bool
    folder: str
    remote_url: str | None = None
    extra_env: tuple[tuple[str, str], ...] = ()  # the caller's, as the local pool's seeds get it

    def __call__(self) -> str:
        from ..store import Store

        made: list[Path] = []
        warned: list[int] = []

        def time_limit(signum: int, _frame: object) -> None:
            # Slurm's warning before the time limit (submitit asks for it): stop as a cancel
            # does, through whatever handles SIGTERM now (the recorder forwards it to the
            # program), so the run is sealed before the limit's SIGKILL.
            warned.append(signum)
            os.kill(os.getpid(), signal.SIGTERM)

        def stop(signum: int, _frame: object) -> None:
            # Before the workspace exists nothing is recorded yet: stop here. From then on the
            # recorder forwards signals to the program while it runs, and a signal after the
            # program ended must not break the sealing of its run: it is ignored.
            if not made:
                raise _Stopped(signum)

        # submitit ignores SIGTERM in its jobs (it requeues on its own signal); this job stops.
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        # submitit's own handler of this signal raises inside the recorder's wait and leaves
        # the replay run unsealed; ledger's replaces it.
        signal.signal(_warning_signal(), time_limit)
        # No terminal: the recorder gives the program a session of its own and forwards every
        # signal this process gets to it, so a cancel reaches the program.
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - for the process's life
        _write_text(Path(self.folder, f"seed-{self.index}.pid"), str(os.getpid()))
        if self.remote_url is None:
            return self._done(self._replay(Store.open(self.ledger), made, warned))
        # No shared ledger: a private one next to this job, filled from the remote, pushed back.
        from ..share.remote import Remote
        from ..share.transfer import pull, push

        remote = Remote(self.remote_url)
        here = Path(tempfile.mkdtemp(prefix="ledger-seed-job-"))
        try:
            store = Store.init(here / ".ledger")
            pull(store, remote, [self.run_id])
            result = self._replay(store, made, warned)
            push(store, remote, [result["run"]])
            return self._done(result)
        finally:
            shutil.rmtree(here, ignore_errors=True)

    def _replay(self, store: Store, made: list[Path], warned: list[int]) -> dict[str, Any]:
        from ..records.base import record_from_json
        from ..records.contract import Contract
        from ..run.find import load_run
        from ..run.lineage import code_source
        from .single import ReplayInterrupted, _one_replay

        _, run = load_run(store, self.run_id)
        if run.contract is None:  # imported runs are refused before any job starts
            raise ReplayError(f"run {self.run_id} was imported: it has no contract to replay")
        contract = record_from_json(store.get_json(run.contract), Contract)
        contract = contract.model_copy(update={"code": code_source(store, run, contract)})
        opts = ReplayOptions(
            mode="seeds",
            seed_arg=self.seed_arg,
            keep_workspace=self.keep_workspace,
            include_logs=self.include_logs,
            workspace_parent=Path(self.workspace_parent) if self.workspace_parent else None,
            extra_env=dict(self.extra_env),
        )
        # The devices this job was given, not the ones the original run saw.
        devices = {DEVICES_ENV: os.environ.get(DEVICES_ENV, "")}
        try:
            replay_run, ws = _one_replay(
                store, run, contract, opts, self.seed_root, self.seed_value, None, made, devices
            )
        except ReplayInterrupted as e:
            if not warned or e.run_id is None:
                raise
            # Stopped at the time limit: the parent reports the seed timed-out, with its run.
            return {"run": e.run_id, "stopped": "time-limit", "notes": []}
        finally:
            if not self.keep_workspace:
                for path in made:
                    shutil.rmtree(path, ignore_errors=True)
        if warned and replay_run.status != "succeeded":  # the warning's signal ended it
            return {"run": replay_run.run_id, "stopped": "time-limit", "notes": ws.notes}
        return {"run": replay_run.run_id, "workspace": str(ws.root), "notes": ws.notes}

    def _done(self, result: dict[str, Any]) -> str:
        """The result the parent reads: written last, once the run is where the parent looks."""
        _write_text(Path(self.folder, f"seed-{self.index}.json"), json.dumps(result))
        print(f"ledger: seed job {self.index + 1}: replay run {result['run']}", file=sys.stderr)
        return str(result["run"])


def _warning_signal() -> signal.Signals:
    """The signal Slurm sends before the time limit: submitit's (``SUBMITIT_PREEMPT_SIGNAL``,
    default USR2)."""
    name = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2")
    found = getattr(signal, name if name.startswith("SIG") else f"SIG{name}", None)
    return found if isinstance(found, signal.Signals) else signal.SIGUSR2


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- the parent ----------------------------------------------------------------------------------


def signal_delay(time_min: int) -> int:
    """Seconds before its time limit a seed job is warned: long enough to stop the program and
    seal its run (hash its outputs), at most a quarter of the job's time (a 1-minute job is
    warned 15 s before, a 2-hour one 5 minutes before). Slurm may send it up to a minute early."""
    return max(10, min(300, time_min * 60 // 4))


def slurm_parameters(ex: ExecutorOptions) -> dict[str, Any]:
    """submitit ``SlurmExecutor`` parameters for one seed job."""
    params: dict[str, Any] = {
        "time": ex.time_min,
        "nodes": 1,
        "ntasks_per_node": 1,
        "signal_delay_s": signal_delay(ex.time_min),
    }
    if ex.partition:
        params["partition"] = ex.partition
    if ex.gpus_per_job:
        params["gpus_per_node"] = ex.gpus_per_job
    if ex.cpus_per_job:
        params["cpus_per_task"] = ex.cpus_per_job
    return params


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise UsageError(
            "the submitit and slurm executors need the submitit package",
            hint="pip install 'ledger[cluster]'",
        ) from None
    return submitit


# What this machine runs for Slurm seed jobs: sbatch to submit (submitit), squeue and scancel
# to watch and cancel them (here and in submitit), and srun, which submitit's executor wants
# found before it takes a job (the jobs' script runs it on the compute node).
SLURM_COMMANDS = ("sbatch", "squeue", "scancel", "srun")


def _slurm_on_path() -> None:
    """A usage error naming the Slurm commands missing from PATH, before a job folder is
    made or the run pushed (submitit's own error came after both, as a failed replay)."""
    missing = [c for c in SLURM_COMMANDS if shutil.which(c) is None]
    if missing:
        raise UsageError(
            f"the slurm executor runs Slurm's {', '.join(SLURM_COMMANDS)}; not found on "
            f"PATH: {', '.join(missing)}",
            hint="run the replay on a Slurm login node, or run the seed jobs here with "
            "--executor submitit-local",
        )


def _executor(ex: ExecutorOptions, folder: Path) -> Any:
    submitit = _submitit()
    if ex.name == "slurm":
        executor = submitit.SlurmExecutor(folder=folder)
        executor.update_parameters(job_name="ledger-seed", **slurm_parameters(ex))
        return executor
    executor = submitit.LocalExecutor(folder=folder)
    executor.update_parameters(timeout_min=ex.time_min)
    return executor


@contextmanager
def _stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the parent's wait the way Ctrl-C does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """submitit-local's job controller inherits SIGINT ignored: Ctrl-C at the terminal must not
    make it kill its task a second later, before the task has sealed its run. The parent
    cancels each job itself (:func:`_cancel`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def run_seed_jobs(
    store: Store,
    run: Run,
    opts: ReplayOptions,
    plan: Sequence[tuple[int, int | None, int | None]],
    metric: str,
    on_seed: Callable[[int, int, Run, float | None], None] | None = None,
    probe: Callable[[int, Run], None] | None = None,
) -> SeedJobs:
    """Run ``plan`` (seed given, root for LEDGER_SEED_ROOT, value for --seed-arg) as jobs, at
    most ``opts.jobs`` at a time; an interruption cancels every job and raises. ``probe``
    sees each replay run as its job ends; when it raises, the jobs running are cancelled, none
    is submitted, and its error is raised."""
    from ..run.series import final_value

    ex = opts.executor
    if ex is None or ex.name == "local":
        raise ValueError("seed jobs need an executor other than local")
    ex.validate()
    _submitit()  # refused before a folder is made or the run pushed for the jobs
    if ex.name == "slurm":
        _slurm_on_path()  # the same
    if ex.job_dir is not None:
        ex.job_dir.mkdir(parents=True, exist_ok=True)
    remote = None
    if ex.remote is not None:
        from ..share.remote import open_remote
        from ..share.transfer import push

        remote = open_remote(store, ex.remote)
        push(store, remote, [run.run_id])  # what each job pulls to replay from
    folder = Path(tempfile.mkdtemp(prefix="ledger-seed-jobs-", dir=ex.job_dir))  # mode 0700
    executor = _executor(ex, folder)
    ended = _Ended(ex.name == "slurm", folder)
    deadline = time.monotonic() + ex.deadline_s(len(plan), opts.jobs)
    pending = list(enumerate(plan))
    running: dict[int, tuple[Any, list[int]]] = {}
    free = list(ex.devices)
    outcomes: dict[int, SeedOutcome] = {}
    try:
        with _stop_signals():
            while pending or running:
                gpus = ex.gpus_per_job if ex.name == "submitit-local" else 0
                while pending and len(running) < opts.jobs and len(free) >= gpus:
                    i, (given, root, value) = pending.pop(0)
                    devices: list[int] = []
                    if ex.name == "submitit-local":
                        devices, free = free[: ex.gpus_per_job], free[ex.gpus_per_job :]
                        executor.update_parameters(
                            gpus_per_node=len(devices), visible_gpus=tuple(devices)
                        )
                    job = SeedJob(
                        ledger=str(store.root),
                        run_id=run.run_id,
                        index=i,
                        seed_root=root,
                        seed_value=value,
                        seed_arg=opts.seed_arg,
                        keep_workspace=opts.keep_workspace,
                        workspace_parent=str(opts.workspace_parent)
                        if opts.workspace_parent
                        else None,
                        include_logs=opts.include_logs,
                        folder=str(folder),
                        remote_url=remote.url if remote is not None else None,
                        extra_env=tuple(sorted(opts.extra_env.items())),
                    )
                    with _sigint_ignored():
                        running[i] = (executor.submit(job), devices)
                gone = ended.left({i: h for i, (h, _) in running.items()})
                for i, (job_handle, devices) in list(running.items()):
                    if i not in gone and not job_handle.done():
                        continue
                    del running[i]
                    free += devices
                    given = plan[i][0]
                    outcome = _collect(
                        store, run, i, plan[i], job_handle, folder, remote, gone.get(i), ex
                    )
                    outcomes[i] = outcome
                    if outcome.run is not None and on_seed is not None:
                        on_seed(i, given, outcome.run, final_value(outcome.run, metric))
                    if outcome.run is not None and probe is not None:
                        probe(i, outcome.run)
                if (running or pending) and time.monotonic() >= deadline:
                    waited = ex.deadline_s(len(plan), opts.jobs)
                    _past_deadline(ex, waited, plan, running, pending, outcomes, folder, ended)
                    break
                if running:
                    time.sleep(_POLL_S)
    except (KeyboardInterrupt, _Stopped) as e:
        signum = e.signum if isinstance(e, _Stopped) else signal.SIGINT
        _cancel([h for h, _ in running.values()], folder, [i for i in running], signum, ended)
        shutil.rmtree(folder, ignore_errors=True)
        raise _interrupted(signum, len(running), len(pending)) from None
    except BaseException:
        _cancel(
            [h for h, _ in running.values()], folder, [i for i in running], signal.SIGTERM, ended
        )
        shutil.rmtree(folder, ignore_errors=True)
        raise
    jobs = SeedJobs([outcomes[i] for i in sorted(outcomes)], folder)
    if all(o.run is not None for o in jobs.outcomes) and not opts.keep_workspace:
        shutil.rmtree(folder, ignore_errors=True)
        jobs.folder = None
    if len(jobs.completed) < 2:
        raise ReplayError(
            f"only {len(jobs.completed)} of {len(plan)} seed jobs completed; no verdict was "
            "stored: " + "; ".join(jobs.notes()[:4]),
            hint=f"the job logs are kept in {folder}",
        )
    return jobs


class _Ended:
    """Slurm jobs that left the queue without a result, seen through ``squeue``
    (:mod:`.slurm_queue`). A job that started (its pid file is there) is given
    ``_RESULT_GRACE_S`` after it ended for its result file to appear on a shared filesystem;
    one that never started can leave none."""

    def __init__(self, slurm: bool, folder: Path) -> None:
        from .slurm_queue import QueueWatch

        self._watch = QueueWatch() if slurm else None
        self._folder = folder

    def left(self, handles: dict[int, Any]) -> dict[int, str]:
        """Index -> the job's last state, for each job of ``handles`` that is gone."""
        if self._watch is None or not handles:
            return {}
        ids = {str(h.job_id): i for i, h in handles.items()}
        states = self._watch.ended(ids)
        out = {}
        for job_id, state in states.items():
            i = ids[job_id]
            started = Path(self._folder, f"seed-{i}.pid").exists()
            if not started or job_id in self._watch.ended([job_id], for_s=_RESULT_GRACE_S):
                out[i] = state
        return out


def _past_deadline(
    ex: ExecutorOptions,
    waited_s: float,
    plan: Sequence[tuple[int, int | None, int | None]],
    running: dict[int, tuple[Any, list[int]]],
    pending: list[tuple[int, tuple[int, int | None, int | None]]],
    outcomes: dict[int, SeedOutcome],
    folder: Path,
    ended: _Ended,
) -> None:
    """The deadline passed: cancel the jobs still queued or running (each seals its run as
    interrupted), report them and the seeds never submitted."""
    what = (
        f"--job-deadline {ex.deadline_min:g} min"
        if ex.deadline_min is not None
        else f"the default deadline ({waited_s / 60:g} min)"
    )
    handles = [h for h, _ in running.values()]
    _cancel(handles, folder, list(running), signal.SIGTERM, ended)
    for i, (h, _) in running.items():
        outcomes[i] = SeedOutcome(
            index=i,
            seed=plan[i][0],
            log=Path(h.paths.stderr),
            error=f"the job had not ended at {what} and was cancelled",
        )
    for i, _planned in pending:
        outcomes[i] = SeedOutcome(
            index=i, seed=plan[i][0], error=f"never submitted: {what} passed first"
        )
    running.clear()
    pending.clear()


def _interrupted(signum: int, running: int, pending: int) -> ReplayError:
    from .single import ReplayInterrupted

    return ReplayInterrupted(
        signum,
        f"the seeds replay was interrupted by signal {signum}: {running} running seed job(s) "
        f"were cancelled (their replay runs are recorded as interrupted), {pending} never "
        "started, and no verdict was stored",
        hint="run the replay again to get a verdict",
    )


def _cancel(
    handles: list[Any], folder: Path, indices: list[int], signum: int, ended: _Ended
) -> None:
    """Stop running jobs and wait until each has sealed its run. A local job is signalled
    directly (its controller ignores SIGINT); a Slurm job is cancelled through scancel, which
    sends SIGTERM and later SIGKILL, and is over once it leaves the queue."""
    deadline = time.monotonic() + _CANCEL_GRACE_S
    cancelled: set[int] = set()
    last = 0.0
    while time.monotonic() < deadline:
        gone = ended.left(dict(zip(indices, handles, strict=True)))
        left = [
            (i, h) for i, h in zip(indices, handles, strict=True) if i not in gone and not h.done()
        ]
        if not left:
            return
        if time.monotonic() - last >= 1.0:
            # Again each second: a job that has not yet installed its handler, or is between
            # building its workspace and starting the program, gets it on a later round.
            last = time.monotonic()
            for i, h in left:
                if getattr(h, "_process", None) is None:  # a Slurm job: scancel, once
                    if i not in cancelled:
                        h.cancel(check=False)
                        cancelled.add(i)
                    continue
                pid = _job_pid(folder, i)
                if pid is not None:
                    with suppress(ProcessLookupError):
                        os.kill(pid, signum)
        time.sleep(_POLL_S)
    for h in handles:  # past the grace: stop what is left
        if not h.done():
            process = getattr(h, "_process", None)
            if process is not None:
                process.kill()
            else:
                h.cancel(check=False)


def _job_pid(folder: Path, index: int) -> int | None:
    try:
        text = Path(folder, f"seed-{index}.pid").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 1 else None


def _collect(
    store: Store,
    run: Run,
    index: int,
    planned: tuple[int, int | None, int | None],
    job: Any,
    folder: Path,
    remote: Any = None,
    left_queue: str | None = None,
    ex: ExecutorOptions | None = None,
) -> SeedOutcome:
    """The replay run a finished job recorded, checked against the ledger, or why there is
    none. ``left_queue``: the Slurm state of a job seen gone from the queue."""
    from ..errors import LedgerError
    from ..records.base import record_from_json
    from ..records.contract import Contract
    from ..run.find import load_run

    given, root, value = planned
    log = Path(job.paths.stderr)
    outcome = SeedOutcome(index=index, seed=given, log=log)
    try:
        raw = json.loads(Path(folder, f"seed-{index}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        if getattr(job, "_process", None) is None:  # a Slurm job: sacct or squeue saw it end
            outcome.error = (
                f"Slurm job {job.job_id} left the queue ({left_queue or job.state}) without a "
                f"result: {_tail(log) if log.exists() else 'it never started'}"
            )
        else:
            outcome.error = f"the job ended ({job.state}) without a replay run: {_tail(log)}"
        return outcome
    run_id = raw.get("run") if isinstance(raw, dict) else None
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        outcome.error = "the job's result names no run"
        return outcome
    try:
        if remote is not None:  # the job pushed its run there: fetched, each object hashed
            from ..share.transfer import pull

            pull(store, remote, [run_id])
        _, replay_run = load_run(store, run_id)
        if replay_run.contract is None:
            raise LedgerError(f"run {run_id} is an imported run, not a replay")
        contract = record_from_json(store.get_json(replay_run.contract), Contract)
    except (LedgerError, OSError) as e:
        where = "on the remote" if remote is not None else "in the ledger"
        outcome.error = f"the job's run {run_id} is not {where}: {e}"
        return outcome
    seeded = contract.seed_root == root if root is not None else str(value) in contract.argv
    if replay_run.replay_of != run.run_id or not seeded:
        outcome.error = f"run {run_id} is not this seed's replay of {run.run_id}"
        return outcome
    notes = raw.get("notes")
    if raw.get("stopped") == "time-limit":
        limit = f" of {ex.time_min} min" if ex is not None else ""
        outcome.stopped_run = replay_run.run_id
        outcome.error = (
            f"the job reached its time limit{limit}: its replay run {replay_run.run_id} was "
            f"stopped and sealed as {replay_run.status}"
        )
        return outcome
    outcome.run = replay_run
    outcome.workspace = SeedWorkspace(
        Path(str(raw.get("workspace", ""))),
        [str(n) for n in notes] if isinstance(notes, list) else [],
    )
    return outcome


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "no log"
    last = [s.strip() for s in text.strip().splitlines() if s.strip()][-lines:]
    return " | ".join(last)[-400:] or "empty log"
