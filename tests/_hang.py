"""A wait on a command that says where it hung, when it hangs.

A test that stops a command mid-way (Ctrl-C in a sweep, SIGTERM mid-replay) and waits for it
to end can only say "timed out" when the command does not end, and under load such a hang was
seen once and never again. ``communicate_or_explain`` waits as ``communicate`` does; past the
deadline it lists what is still running of the command (pid, state, the kernel function it
sleeps in, its command line), then sends SIGABRT to each process, deepest first: a Python
started with ``PYTHONFAULTHANDLER=1`` (``HANG_ENV``, for the command's environment) prints
every thread's stack to its stderr on SIGABRT, and the failure carries that stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

__all__ = ["HANG_ENV", "communicate_or_explain", "describe_tree"]

# For subprocess_env(**HANG_ENV): every Python of the command dumps its threads on SIGABRT.
HANG_ENV = {"PYTHONFAULTHANDLER": "1"}


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").replace("\0", " ").strip()
    except OSError:
        return "?"


def _tree(pid: int) -> list[Any]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def describe_tree(pid: int) -> str:
    """One line per process of ``pid``'s tree: pid, parent, state, kernel wait, command."""
    lines = []
    for p in _tree(pid):
        stat = _read(f"/proc/{p.pid}/stat").rsplit(")", 1)[-1].split()
        state, ppid = (stat[0], stat[1]) if len(stat) > 1 else ("?", "?")
        wchan = _read(f"/proc/{p.pid}/wchan")
        cmd = _read(f"/proc/{p.pid}/cmdline")[:200]
        lines.append(f"  pid {p.pid} (parent {ppid}) state {state} wchan {wchan}: {cmd}")
    return "\n".join(lines) or "  (nothing left of it)"


def _abort_one_at_a_time(procs: list[Any]) -> None:
    """SIGABRT each of ``procs`` in turn (deepest first: a parent still pumps its output),
    each once the one before has ended, all of them stopped meanwhile. Aborted at once, a
    parent and its child wrote their stacks into the same stderr together, interleaved
    line by line (a CI run of 7 December: ``line "<string>"3 in , line wait_forever7``); and
    a parent left running would leave the wait it hung in once its child died, so its stack
    would no longer say where. A stopped process handles its pending SIGABRT (signal 6)
    before the SIGCHLD (17) of its child's end when it is continued."""
    import time

    import psutil

    def signal_each(sig: int, among: list[Any]) -> None:
        for p in among:
            try:
                os.kill(p.pid, sig)
            except OSError:
                continue

    signal_each(signal.SIGSTOP, procs)
    for p in procs:
        signal_each(signal.SIGABRT, [p])
        signal_each(signal.SIGCONT, [p])
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # its stack written: it is gone, or a zombie
            try:
                if p.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.Error:
                break
            time.sleep(0.02)
    signal_each(signal.SIGCONT, procs)  # any that outlived its SIGABRT runs on, to be killed


def communicate_or_explain(
    proc: subprocess.Popen[Any], timeout: float, what: str = "the command"
) -> tuple[Any, Any]:
    """``proc.communicate(timeout)``; past it, fail with the tree and its threads' stacks."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    tree = describe_tree(proc.pid)
    _abort_one_at_a_time(list(reversed(_tree(proc.pid))))
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    text = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err or "")
    raise AssertionError(
        f"{what} had not ended {timeout:g} s after it was stopped; what was running:\n{tree}\n"
        f"its stderr, with the stacks SIGABRT made it print:\n{text[-20000:]}"
    )
