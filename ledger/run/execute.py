"""Run a child command the way the user would, while teeing its output and timing it.

The child's behaviour must not change: its stdin is ours, its output reaches the terminal as it
is written (we read the pipes in small chunks and write them straight through), its exit code
becomes ours. Signals: with a terminal on stdin the child stays in our process group, so Ctrl-C
reaches it directly and we forward only SIGTERM/SIGHUP/SIGQUIT; without a terminal the child
gets its own process group and every one of SIGINT/SIGTERM/SIGHUP/SIGQUIT is forwarded to the
whole group. torchrun starts each worker in a session of its own, so signals reach the workers
through torchrun, which stops them when it is signalled.

When the command has exited, processes it left behind that still carry the run's
``LEDGER_RUN_ID`` (workers orphaned by a launcher that was SIGKILLed, a backgrounded job) are
stopped: SIGTERM, then SIGKILL after ``STRAGGLER_GRACE`` seconds. Otherwise they would keep the
output pipes open, so the recorder would wait for them, and keep writing into a run that is
being sealed. The run's notes name them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

__all__ = [
    "ExecResult",
    "LogFilter",
    "Sink",
    "execute",
    "held_signals",
    "interrupt_running",
    "stopped_by",
    "terminal_streams",
]

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
STRAGGLER_GRACE = 5.0

# The signal forwarders of the commands execute() is running now, in any thread. Only the main
# thread receives signals; interrupt_running() passes one on to commands run from other threads.
_RUNNING: dict[int, Callable[[int, object], None]] = {}
_RUNNING_LOCK = threading.Lock()


class TerminalStream(Protocol):
    def write(self, chunk: bytes, /) -> object: ...
    def flush(self) -> object: ...


# Where a command's output goes on our side, per thread (default: this process's stdout and
# stderr). replay --jobs gives each seed's thread writers that keep lines whole and prefixed.
_TERMINAL = threading.local()


@contextlib.contextmanager
def terminal_streams(out: TerminalStream, err: TerminalStream) -> Iterator[None]:
    """Commands execute() runs in this thread meanwhile write their output to ``out``/``err``."""
    _TERMINAL.streams = (out, err)
    try:
        yield
    finally:
        del _TERMINAL.streams


@contextlib.contextmanager
def held_signals(what: str) -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM/SIGHUP/SIGQUIT while ``what`` is done, then obey the first one held.

    For the record of a command that has ended: a second Ctrl-C or a scheduler's SIGTERM
    landing then used to kill the recorder mid-seal, leaving the run unsealed (its staging dir
    abandoned, its output never stored). Here it waits, as a signal blocked with sigprocmask
    would: the first one held is said on stderr and, when the block ends, sent again to this
    process under the handler that was there before (the default ends it; a caller's own, such
    as a replay's, acts as it would have). A second one ends the process at once (SIGKILL
    always does). Yields the signals held. Outside the main thread, does nothing: Python runs
    signal handlers in the main thread only."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    old: dict[signal.Signals, Any] = {}

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)
        if len(held) > 1:  # asked twice: give up the seal, die as the signal would have
            for sig, handler in old.items():
                signal.signal(sig, handler)
            os.kill(os.getpid(), signum)
            return
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(
                f"ledger: {signal.Signals(signum).name} while {what}; finishing that first, "
                "then stopping (send it again to stop at once, leaving the run unsealed)\n"
            )
            sys.stderr.flush()

    for sig in FORWARDED:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # ignored (nohup, `cmd &`): stays so
            old[sig] = signal.signal(sig, hold)
    try:
        yield held
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if held:
        os.kill(os.getpid(), held[0])  # obeyed now, by the handler from before


def stopped_by(result: ExecResult, held: Sequence[int]) -> int | None:
    """The stop signal a run is sealed as ``interrupted`` by, or None.

    ``result.interrupted_by``: one the recorder received, and forwarded, while the command ran.
    Else the first one ``held`` (held_signals) after the command ended, when the command itself
    died of a stop signal or exited 128 + one, as a shell does: whoever signals every process
    of a job at once (Slurm's ``scancel``, ``kill -TERM -- -PGID``, a container's stop) may
    reach the command first, and the recorder's own signal then arrives while the record is
    being written. Without it the run would read ``killed``: ended by a signal nobody asked the
    recorder to pass on (``pkill`` of the command alone, the OOM killer) - which stays so."""
    if result.interrupted_by is not None:
        return result.interrupted_by
    stops = {int(s) for s in FORWARDED}
    code = result.signal if result.signal is not None else result.returncode - 128
    if held and code in stops:
        return int(held[0])
    return None


def interrupt_running(signum: int = signal.SIGINT) -> int:
    """Forward ``signum`` to every command running under execute() in this process, as if
    this process had received it: each run is then sealed as interrupted. The number reached."""
    with _RUNNING_LOCK:
        forwarders = list(_RUNNING.values())
    for forward in forwarders:
        forward(signum, None)
    return len(forwarders)


def run_processes(run_id: str) -> list[int]:
    """Other processes whose environment (as they were started) has ``LEDGER_RUN_ID=run_id``.
    Linux /proc only; elsewhere, or for processes of other users, nothing is found."""
    needle = b"LEDGER_RUN_ID=" + run_id.encode()
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()  # empty for a zombie: it is gone already
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop_stragglers(run_id: str, grace: float = STRAGGLER_GRACE) -> list[int]:
    """SIGTERM what is left of the run, SIGKILL what outlives ``grace``; the pids found."""
    first = run_processes(run_id)
    if not first:
        return []
    _signal_all(first, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while (left := run_processes(run_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        _signal_all(left, signal.SIGKILL)  # listed again just now: no pid reused meanwhile
        deadline = time.monotonic() + 2.0
        while run_processes(run_id) and time.monotonic() < deadline:
            time.sleep(0.05)
    return first


def pipe_holders(inodes: set[int]) -> list[int]:
    """Other processes with a descriptor on one of the pipes ``inodes`` (``pipe:[inode]`` in
    /proc/PID/fd), this process's own children left out: a command another thread is starting
    (seeds run side by side) holds every descriptor for a moment between its fork and its
    exec, and a straggler of an exited command is no child of ours (it was reparented). Linux
    /proc only; elsewhere, or for processes of other users, nothing is found."""
    links = {f"pipe:[{i}]" for i in inodes}
    me = os.getpid()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                held = os.readlink(f"/proc/{name}/fd/{fd}") in links
            except OSError:
                continue
            if held:
                if _parent_of(int(name)) != me:
                    found.append(int(name))
                break
    return found


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # "PID (COMMAND) STATE PPID ...": the command may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


# How long the output is waited for once the command exited and its marked processes were
# stopped, before what still holds the pipes is looked for: a process that cleared its
# environment (``env -i``), or one the environment scan missed, would keep the recorder
# reading for as long as it lives.
PIPE_WAIT = 1.0


def _join_pumps(pumps: list[threading.Thread], inodes: set[int], grace: float) -> list[int]:
    """Wait for the pumps to reach the end of the command's output. Whatever still holds the
    pipes ``PIPE_WAIT`` seconds on (after ``stop_stragglers``) gets SIGTERM, then SIGKILL
    once ``grace`` has passed, looked for again each round: the pids stopped. When none is
    found (a holder /proc does not show, of another user), the pumps are waited for as
    before, without scanning /proc again: no process can take up a pipe that none holds."""

    def joined(timeout: float) -> bool:
        end = time.monotonic() + timeout
        for p in pumps:
            p.join(max(0.0, end - time.monotonic()))
        return not any(p.is_alive() for p in pumps)

    stopped: list[int] = []
    if joined(PIPE_WAIT):
        return stopped
    signalled = time.monotonic()
    while True:
        holders = pipe_holders(inodes)
        if not holders:
            for p in pumps:
                p.join()
            return stopped
        killing = time.monotonic() - signalled >= grace
        _signal_all(holders, signal.SIGKILL if killing else signal.SIGTERM)
        stopped += [pid for pid in holders if pid not in stopped]
        if joined(0.2):
            return stopped


@dataclass
class ExecResult:
    returncode: int
    signal: int | None
    interrupted_by: int | None  # a signal we received and forwarded
    wall_seconds: float
    cpu_user_seconds: float
    cpu_system_seconds: float
    peak_rss_bytes: int
    started_monotonic: float
    notes: list[str] = field(default_factory=list)
    logs_filtered: bool = False  # every byte of both logs went through its LogFilter


class Sink(Protocol):
    """Where a stream's bytes go besides the terminal and the log, as they arrive."""

    def write(self, chunk: bytes, /) -> None: ...
    def close(self) -> None: ...


class LogFilter(Protocol):
    """What a stream's bytes go through before they are written to its log file (secrets
    known at launch are scrubbed there: ``ledger.capture.scrub_stream``). ``feed`` may hold
    bytes back; ``flush`` returns the rest at the end of the stream; ``held`` is what it
    holds back now, unfiltered."""

    def feed(self, chunk: bytes, /) -> bytes: ...
    def flush(self) -> bytes: ...
    def held(self) -> bytes: ...


class _Filtered:
    """A log file written through a LogFilter. If the filter fails (it should not), the rest
    is written unfiltered and a note says so: the recorder then scrubs the log at seal."""

    def __init__(self, log: BinaryIO, flt: LogFilter | None, errors: list[str]) -> None:
        self.log, self.flt, self.errors, self.ok = log, flt, errors, flt is not None

    def write(self, chunk: bytes) -> None:
        if self.flt is None:
            out = chunk
        else:
            try:
                out = self.flt.feed(chunk)
            except Exception as e:
                self._fail(e, chunk)
                return
        self.log.write(out)
        self.log.flush()  # on disk as it comes: a recorder killed now leaves what it had

    def close(self) -> None:
        if self.flt is not None:
            try:
                out = self.flt.flush()
            except Exception as e:
                self._fail(e, b"")
                return
            self.log.write(out)

    def _fail(self, e: Exception, chunk: bytes) -> None:
        if self.flt is None:
            raise TypeError("a filter failure without a filter")
        with contextlib.suppress(Exception):
            chunk = self.flt.held() + chunk
        self.log.write(chunk)
        self.errors.append(f"the log filter failed ({type(e).__name__}: {e}); logged unfiltered")
        self.flt, self.ok = None, False


def _pump(
    src: BinaryIO, dest: TerminalStream, log: _Filtered, sink: Sink | None, errors: list[str]
) -> None:
    # Each chunk is handled once and in time linear in its size: whatever the child writes
    # (a 50 MB line without a newline), this loop keeps up with the pipe. A sink that fails
    # is dropped, never the loop: a pump that stopped would leave the child blocked on a
    # full pipe.
    fd = src.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        try:
            dest.write(chunk)
            dest.flush()
        except (OSError, ValueError):
            pass  # our terminal went away; keep recording
        log.write(chunk)
        if sink is not None:
            try:
                sink.write(chunk)
            except Exception as e:
                errors.append(f"--metric matching stopped on this stream: {type(e).__name__}: {e}")
                sink = None
    if sink is not None:
        try:
            sink.close()
        except Exception as e:
            errors.append(f"--metric matching stopped on this stream: {type(e).__name__}: {e}")
    log.close()
    log.log.flush()


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """``proc.wait()`` that a signal wakes whichever thread the kernel gave it to.

    Python runs signal handlers in the main thread only, between bytecodes. A blocking
    ``waitpid`` there is cut short only by a signal the kernel delivered to the main thread;
    one delivered to another thread (the output pumps, the input copier: any thread not
    blocking it may get a process-directed signal) waited until the command ended by itself,
    so a SIGTERM from a scheduler was never forwarded and the run was sealed as if nothing
    had happened. Here the main thread sleeps in ``poll`` on the child's pidfd and on the
    signal wake-up fd, which the C-level handler writes to from any thread: it wakes, and
    the forwarding handler runs at once. Without pidfds (Linux < 5.3, other systems): the
    plain wait."""
    import select

    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None or not hasattr(select, "poll"):
        return proc.wait()
    try:
        pidfd = pidfd_open(proc.pid)
    except OSError:  # ENOSYS; ESRCH is not possible: the child is not reaped yet
        return proc.wait()
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            poller.register(r, select.POLLIN)
            while True:
                ready = {fd for fd, _ in poller.poll()}  # handlers run as this returns
                if r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(r, 512)
                if pidfd in ready:
                    return proc.wait()
        finally:
            signal.set_wakeup_fd(old_fd)
    finally:
        for fd in (r, w, pidfd):
            os.close(fd)


def execute(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdout_log: Path,
    stderr_log: Path,
    stdout_sink: Sink | None = None,
    stderr_sink: Sink | None = None,
    stdout_filter: LogFilter | None = None,
    stderr_filter: LogFilter | None = None,
    run_id: str | None = None,
) -> ExecResult:
    """Run ``argv`` to completion; with ``run_id``, stop what it leaves behind (module doc).
    The terminal gets the output as it is; the log files get it through the filters."""
    interactive = sys.stdin is not None and sys.stdin.isatty()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=None,  # inherited: the child reads our stdin
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=not interactive,
    )
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        try:
            if interactive:
                if signum != signal.SIGINT:  # the terminal already sent SIGINT to the child
                    proc.send_signal(signum)
            else:
                os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    with _RUNNING_LOCK:
        _RUNNING[id(proc)] = forward
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in FORWARDED:
            old_handlers[sig] = signal.signal(sig, forward)
    if proc.stdout is None or proc.stderr is None:
        raise TypeError("the command's output pipes are missing")
    term_out, term_err = getattr(_TERMINAL, "streams", (sys.stdout.buffer, sys.stderr.buffer))
    sink_errors: list[str] = []
    with open(stdout_log, "wb") as out_file, open(stderr_log, "wb") as err_file:
        out_log = _Filtered(out_file, stdout_filter, sink_errors)
        err_log = _Filtered(err_file, stderr_filter, sink_errors)
        pumps = [
            threading.Thread(
                target=_pump,
                args=(proc.stdout, term_out, out_log, stdout_sink, sink_errors),
                daemon=True,
            ),
            threading.Thread(
                target=_pump,
                args=(proc.stderr, term_err, err_log, stderr_sink, sink_errors),
                daemon=True,
            ),
        ]
        for p in pumps:
            p.start()
        try:
            while True:
                try:
                    returncode = _wait(proc) if old_handlers else proc.wait()
                    break
                except KeyboardInterrupt:  # pragma: no cover - handler replaced above
                    continue
            stragglers = stop_stragglers(run_id) if run_id else []
            inodes = {os.fstat(f.fileno()).st_ino for f in (proc.stdout, proc.stderr)}
            stragglers += [
                pid for pid in _join_pumps(pumps, inodes, STRAGGLER_GRACE) if pid not in stragglers
            ]
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(id(proc), None)
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            proc.stdout.close()
            proc.stderr.close()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ExecResult(
        returncode=returncode,
        signal=-returncode if returncode < 0 else None,
        interrupted_by=received[0] if received else None,
        wall_seconds=wall,
        cpu_user_seconds=max(0.0, after.ru_utime - before.ru_utime),
        cpu_system_seconds=max(0.0, after.ru_stime - before.ru_stime),
        # ru_maxrss is KiB on Linux: the largest single descendant, not a sum.
        peak_rss_bytes=int(after.ru_maxrss) * 1024,
        started_monotonic=t0,
        logs_filtered=out_log.ok and err_log.ok,
        notes=(
            [
                f"{len(stragglers)} process(es) of the run were still running after the "
                f"command exited and were stopped (pids {', '.join(map(str, stragglers))})"
            ]
            if stragglers
            else []
        )
        + sink_errors,
    )
