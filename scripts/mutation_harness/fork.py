"""A fork server for ``scripts/mutation.py``: each mutant's pytest run forked from a warm process.

A mutant's run used to be a fresh ``python -m pytest``: about 0.6 s of interpreter start,
pytest's own imports and the third-party libraries the tests import (torch alone is most of a
second) before the first test, for every one of some 2,700 mutants. The server pays that once.
It imports pytest and every module outside the checkout that collecting the module's tests
imports (found by a collection run in a child, :func:`shared_modules`), then forks one child
per mutant. The child imports ``ledger`` and the tests afresh from the copy of the checkout,
where the mutant was written just before, runs ``pytest.main`` with the arguments a
``python -m pytest`` run would get and leaves with its exit code. Nothing of the checkout is
imported before the fork, so the mutated module is always the one that runs; children the
tests start (``python -m ledger``) read the same copy through ``PYTHONPATH``.

Modules of the distributions that register pytest plugins are not preloaded: pytest rewrites
their asserts on import, and warns (an error under ``filterwarnings = error``) when one was
imported before it. A server whose preloading started a Python thread forks nothing (a lock
held by that thread would hang the children): the caller falls back to plain runs, as it does
when a test that killed a mutant in a forked run fails forked without any mutant too.

Protocol, one JSON line each way: the request ``{"cwd", "args", "env", "timeout", "log",
"failed", "progress", "limits", "backstop_min"}`` (``log``: the child's output; ``failed``:
where it lists the tests that fail; ``progress``: where it writes each test's node id as the
test starts; ``limits``: node id -> the time one test may have, :class:`TestWatch`;
``backstop_min``: the caller's ``BACKSTOP_MIN``, :func:`wait_run`); the replies ``{"pid"}``
when the child has started and ``{"rc", "seconds", "stopped"}`` when it and every process left
in its session are gone (``stopped``: None, ``"timeout"`` or ``"starved"``, :func:`wait_run`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve()

# Run with ``python -c`` (not as a script): ``sys.path[0]`` is then the working directory, as
# under ``python -m pytest``, and a test that spawns processes with multiprocessing does not
# re-import a ``__main__`` file in each of them.
_BOOT = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__mutation_fork__')"

_COLLECT = """
import json, os, sys
import pytest
copy = os.path.realpath(os.getcwd())
rc = pytest.main(sys.argv[2:])
names = []
for name, mod in list(sys.modules.items()):
    top = name.partition(".")[0]
    if top in ("ledger", "tests", "conftest", "__main__", "__mp_main__") or mod is None:
        continue
    f = getattr(mod, "__file__", None) or ""
    if f and os.path.realpath(f).startswith(copy + os.sep):
        continue
    names.append(name)
with open(sys.argv[1], "w") as fh:
    json.dump({"rc": int(rc), "names": names}, fh)
"""


def _pytest_plugin_packages() -> set[str]:
    """Top-level names of the distributions with a ``pytest11`` entry point (pytest marks every
    module of such a distribution for assert rewriting)."""
    from importlib.metadata import distributions

    out: set[str] = set()
    for dist in distributions():
        if not any(ep.group == "pytest11" for ep in dist.entry_points):
            continue
        for f in dist.files or []:
            parts = f.parts
            if not parts or parts[0].endswith((".dist-info", ".egg-info")) or parts[0] == "..":
                continue
            if len(parts) == 1 and parts[0].endswith(".py"):
                out.add(parts[0][:-3])
            elif len(parts) > 1:
                out.add(parts[0])
    return out


def shared_modules(copy: Path, args: list[str], env: dict[str, str], timeout: float) -> list[str]:
    """The modules outside ``copy`` that collecting ``args`` imports, in import order; [] when
    the collection fails (the caller then runs without preloading)."""
    out = copy / ".mutation-shared-modules.json"
    out.unlink(missing_ok=True)
    try:
        subprocess.run(
            [sys.executable, "-c", _COLLECT, str(out), "--collect-only", "-q", *args],
            cwd=copy,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        found = json.loads(out.read_text())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return []
    if found.get("rc") != 0:
        return []
    skip = _pytest_plugin_packages()
    return [n for n in found["names"] if n.partition(".")[0] not in skip]


class ForkServer:
    """The client side: one server per copy of the checkout, used by one thread at a time."""

    def __init__(self, copy: Path, env: dict[str, str], preload: list[str]) -> None:
        self.copy = copy
        listing = copy / ".mutation-preload.json"
        listing.write_text(json.dumps(preload))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(HERE), str(listing)],
            cwd=copy,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        ready = self._read()
        self.ok = bool(ready and ready.get("ready"))
        self.threads = int(ready.get("threads", 0)) if ready else 0
        if not self.ok:
            self.close()

    def _read(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            return None
        loaded = json.loads(line)
        return loaded if isinstance(loaded, dict) else None

    def run(
        self,
        args: list[str],
        env: dict[str, str],
        timeout: float,
        running: set[int],
        log: Path | None = None,
        failed: Path | None = None,
        progress: Path | None = None,
        limits: dict[str, float] | None = None,
    ) -> tuple[int, float, str | None] | None:
        """(exit code, seconds, why it was stopped: None, ``"timeout"`` or ``"starved"``,
        :func:`wait_run`), or None when the server is gone. ``log``: where
        the child's output goes (else nowhere); ``failed``: where it lists the tests that
        failed (:func:`failed_tests`); ``progress``: where it names each test as it starts
        (:func:`last_test`), and ``limits`` the time each test may have (:class:`TestWatch`)."""
        assert self.proc.stdin is not None
        try:
            request = {
                "cwd": str(self.copy),
                "args": args,
                "env": env,
                "timeout": timeout,
                "log": None if log is None else str(log),
                "failed": None if failed is None else str(failed),
                "progress": None if progress is None else str(progress),
                "limits": limits or {},
                # Read here, in the caller's process, where a test may lower it; the server
                # waits with this, not with its own copy of the module (round 19).
                "backstop_min": BACKSTOP_MIN,
            }
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            started = self._read()
            if started is None or "pid" not in started:
                return None
            pid = int(started["pid"])
            running.add(pid)
            try:
                done = self._read()
            finally:
                running.discard(pid)
        except (OSError, ValueError):
            return None
        if done is None or "rc" not in done:
            return None
        stopped = done.get("stopped")
        return int(done["rc"]), float(done["seconds"]), None if stopped is None else str(stopped)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


# Every process of a test run carries this variable (the run's id): a process the tests
# started in a session of its own (``ledger record`` starts the recorded program so) leaves the
# run's session, which is all ``killpg`` stops; :func:`kill_marked` finds it by the variable.
RUN_MARK = "LEDGER_MUTATION_RUN"


def kill_marked(run_id: str) -> list[int]:
    """SIGKILL every process whose environment carries ``RUN_MARK=run_id`` (what a stopped run
    left running outside its session); the pids killed. Without ``/proc``, nothing."""
    needle = f"{RUN_MARK}={run_id}".encode()
    killed: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return killed
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                marked = needle in fh.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if marked:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(name), signal.SIGKILL)
                killed.append(int(name))
    return killed


def _child(request: dict[str, Any]) -> int:
    os.setsid()
    os.environ[RUN_MARK] = str(os.getpid())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    log = request.get("log")
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if log else devnull
    for fd in (1, 2):
        os.dup2(out, fd)
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    if request["cwd"] not in sys.path:
        sys.path.insert(0, request["cwd"])
    sys.argv = ["pytest"]
    import pytest

    failed, progress = request.get("failed"), request.get("progress")
    plugins: list[object] = [] if not failed else [_Failures(failed)]
    if progress:
        plugins.append(_Progress(progress))
    rc = int(pytest.main(list(request["args"]), plugins=plugins))
    _finalize()
    return rc


class _Failures:
    """pytest plugin of a forked child: the node id of each test (or file, for a collection
    error) that failed, one a line, written as it fails (a run killed later keeps them)."""

    def __init__(self, path: str) -> None:
        self.path = path
        Path(path).write_text("")

    def _add(self, report: Any) -> None:
        if report.failed:
            with open(self.path, "a") as fh:
                fh.write(report.nodeid + "\n")

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._add(report)

    def pytest_collectreport(self, report: Any) -> None:
        self._add(report)


class _Progress:
    """pytest plugin of a forked child: the node id of each test as it starts, one a line
    (:class:`TestWatch` reads the last one)."""

    def __init__(self, path: str) -> None:
        self.path = path
        Path(path).write_text("")

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        with open(self.path, "a") as fh:
            fh.write(nodeid + "\n")


def last_test(path: Path) -> str | None:
    """The node id of the last test a forked run started (:class:`_Progress`), if any."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


class TestWatch:
    """The test a forked run is in, and whether it has had more than its own limit of the
    run's time (:class:`RunClock`). A run's timeout is three times its tests' time together:
    a mutant that hangs the first of 100 selected tests (a read loop that never ends) held
    the run for all of it, over 30 minutes at nice 19 on the loaded machine (7 December,
    docs/mutation.md: "Each test has a limit of its own"). A test past its own limit stops
    the run as the timeout would."""

    __test__ = False  # not a pytest test class

    def __init__(self, progress: Path, limits: dict[str, float]) -> None:
        self.progress, self.limits = progress, limits
        self.test: str | None = None
        self.since = 0.0  # the run's time when the test started
        self.read = 0  # bytes of the progress file read so far

    def over(self, had: float) -> bool:
        """Whether the test running now has had more than its limit; ``had``: the run's
        time so far. A test is seen as started at the first reading after it started."""
        try:
            with open(self.progress, "rb") as fh:
                fh.seek(self.read)
                more = fh.read()
        except OSError:
            more = b""
        whole = more[: more.rfind(b"\n") + 1]  # a line still being written waits
        if whole:
            self.read += len(whole)
            started = [line for line in whole.decode(errors="replace").splitlines() if line]
            if started:
                self.test, self.since = started[-1], had
        limit = None if self.test is None else self.limits.get(self.test)
        return limit is not None and had - self.since >= limit


def failed_tests(path: Path) -> list[str]:
    """The node ids a forked run recorded as failed (:class:`_Failures`), in order, once each."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return list(dict.fromkeys(line for line in lines if line))


def _finalize() -> None:
    """What the interpreter does at exit before the child leaves through ``os._exit``: wait
    for the threads that are not daemons, then run the ``atexit`` handlers. A mutant that makes
    a thread keep the process alive (a worker no longer a daemon) hangs here as it would in a
    plain ``python -m pytest``, and is killed by the timeout."""
    import atexit

    threading._shutdown()  # type: ignore[attr-defined]  # as multiprocessing's children do
    atexit._run_exitfuncs()


# The timeout counts the time a run had, not wall time: a run at ``nice -n 19`` on a machine
# busy with other work can wait minutes for a CPU, and a wall-clock timeout counted that as a
# hang, a kill of nothing (round 9 of docs/mutation.md deleted 18). Between two readings of
# the run's threads (every ``POLL_S``), the run had the whole interval when none of them is
# runnable (asleep, waiting on a lock or a child: a deadlock counts in full), else the CPU
# time its threads got in it (a busy loop counts what it gets; a starved run hardly counts).
# The kernel's count of the time a thread waited for a CPU (``schedstat``'s second field) is
# of no use here: it grows only when the thread is next scheduled, seconds late under load.
# Wall time still stops a run at the backstop, ``BACKSTOP_FACTOR`` times the timeout (at
# least ``BACKSTOP_MIN`` s); a run stopped there is ``starved``: not a result at all.
POLL_S = 0.5
BACKSTOP_FACTOR = 10.0
BACKSTOP_MIN = 600.0

Tasks = dict[int, tuple[bool, int]]


def session_tasks(sid: int) -> Tasks | None:
    """Each thread of the processes of session ``sid``: thread id -> (runnable now, CPU
    nanoseconds since it started); None when ``/proc`` does not say."""
    if not os.path.exists("/proc/self/task"):
        return None
    out: Tasks = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                # pid (comm) state ppid pgrp session ...: comm may hold spaces and ")"
                if int(fh.read().rpartition(b")")[2].split()[3]) != sid:
                    continue
            for tid in os.listdir(f"/proc/{name}/task"):
                with open(f"/proc/{name}/task/{tid}/stat", "rb") as fh:
                    state = fh.read().rpartition(b")")[2].split()[0]
                with open(f"/proc/{name}/task/{tid}/schedstat", "rb") as fh:
                    out[int(tid)] = (state == b"R", int(fh.read().split()[0]))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return out


class RunClock:
    """The time a run (the processes of session ``sid``) has had since the clock started:
    for each interval between two readings, all of it when no thread of the run is runnable
    at its end, else the CPU time the run's threads got in it. Wall time without ``/proc``."""

    def __init__(self, sid: int, sample: Callable[[int], Tasks | None] | None = None) -> None:
        self.sid = sid
        self.sample = session_tasks if sample is None else sample
        self.start = self.last = time.monotonic()
        self.seen: dict[int, int] = {}
        self.had = 0.0

    def tick(self) -> float:
        now = time.monotonic()
        step, self.last = now - self.last, now
        tasks = self.sample(self.sid)
        if tasks is None or not any(runnable for runnable, _ in tasks.values()):
            self.had += step
        else:
            used = sum(max(0, cpu - self.seen.get(t, 0)) for t, (_, cpu) in tasks.items())
            self.had += min(step, used / 1e9)
        if tasks is not None:
            self.seen = {t: cpu for t, (_, cpu) in tasks.items()}
        return self.had

    @property
    def wall(self) -> float:
        return time.monotonic() - self.start


def wait_run(
    sid: int,
    timeout: float,
    exited: Callable[[float], bool],
    sample: Callable[[int], Tasks | None] | None = None,
    watch: TestWatch | None = None,
    backstop_min: float | None = None,
) -> str | None:
    """Wait for a run: None when it ended (``exited(s)`` waits up to s seconds and says if it
    did), ``"timeout"`` once it has had ``timeout`` seconds (:class:`RunClock`) or the test
    it is in has had more than its limit (``watch``), ``"starved"`` when wall time reaches the
    backstop first (``backstop_min``: the least backstop, else ``BACKSTOP_MIN``)."""
    clock = RunClock(sid, sample)
    least = BACKSTOP_MIN if backstop_min is None else backstop_min
    backstop = max(BACKSTOP_FACTOR * timeout, least)
    while True:
        if exited(max(0.01, min(POLL_S, timeout - clock.had, backstop - clock.wall))):
            return None
        had = clock.tick()
        if had >= timeout or (watch is not None and watch.over(had)):
            return "timeout"
        if clock.wall >= backstop:
            return "starved"


def _wait(
    pid: int, timeout: float, watch: TestWatch | None = None, backstop_min: float | None = None
) -> tuple[int, str | None]:
    """The child's exit code once it is gone (killed past ``timeout`` of the time it had, or a
    test past its limit, or at the wall-clock backstop: :func:`wait_run`), then its whole
    session is killed: whatever the tests left running goes with it."""
    stopped = None
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            stopped = wait_run(
                pid,
                max(timeout, 1.0),
                lambda s: bool(select.select([fd], [], [], s)[0]),
                watch=watch,
                backstop_min=backstop_min,
            )
            if stopped is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
        finally:
            os.close(fd)
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    kill_marked(str(pid))
    return os.waitstatus_to_exitcode(status), stopped


def serve(preload_file: str, stdin: IO[str], stdout: IO[str]) -> None:
    import importlib

    sys.dont_write_bytecode = True
    import pytest  # noqa: F401  (shared by every child)

    for name in json.loads(Path(preload_file).read_text()):
        with contextlib.suppress(BaseException):
            importlib.import_module(name)
    # Python threads would be gone in the children with whatever locks they held. Native
    # thread pools (OpenBLAS starts one when numpy is imported) handle fork themselves; the
    # caller's forked baseline run shows if one does not.
    threads = threading.active_count()
    leaked = [n for n in sys.modules if n.partition(".")[0] in ("ledger", "tests", "conftest")]
    ready = threads == 1 and not leaked
    stdout.write(
        json.dumps({"ready": ready, "threads": threads, "native": _threads(), "leaked": leaked[:5]})
        + "\n"
    )
    stdout.flush()
    if not ready:
        return
    current: list[int] = []

    def stop(_signum: int, _frame: object) -> None:
        for pid in current:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    for line in stdin:
        request = json.loads(line)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child leaves through os._exit
            rc = 70
            try:
                rc = _child(request)
            except BaseException:
                rc = 70
            finally:
                os._exit(rc)
        current[:] = [pid]
        stdout.write(json.dumps({"pid": pid}) + "\n")
        stdout.flush()
        progress, limits = request.get("progress"), request.get("limits")
        watch = TestWatch(Path(progress), limits) if progress and limits else None
        rc, stopped = _wait(pid, float(request["timeout"]), watch, float(request["backstop_min"]))
        current[:] = []
        seconds = time.monotonic() - t0
        stdout.write(json.dumps({"rc": rc, "seconds": seconds, "stopped": stopped}) + "\n")
        stdout.flush()


if __name__ == "__mutation_fork__":
    serve(sys.argv[2], sys.stdin, sys.stdout)
