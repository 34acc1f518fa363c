"""Helpers shared by tests (tests/ is on sys.path through conftest.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, overload

REPO = Path(__file__).resolve().parent.parent


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for child processes that must import this checkout's ``ledger``. A child
    is not a worker of this run's pytest-xdist (an inner pytest would think it was one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


@overload
def start_ledger(
    *args: str,
    cwd: Path | None = None,
    text: Literal[True] = True,
    timeout: float = 120,
    **env: str,
) -> subprocess.CompletedProcess[str]: ...
@overload
def start_ledger(
    *args: str, cwd: Path | None = None, text: Literal[False], timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[bytes]: ...
def start_ledger(
    *args: str, cwd: Path | None = None, text: bool = True, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[Any]:
    """``python -m ledger ARGS`` started as a process of its own (no fork server), in ``cwd``
    with this checkout's environment and ``env``; its output as text, or as bytes with
    ``text=False``; killed after ``timeout`` seconds of wall time. For what only a started
    process shows, and ``run_ledger``'s fallback."""
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=subprocess_env(**env),
        capture_output=True,
        text=text,
        timeout=timeout,
    )


def run_ledger(
    *args: str, cwd: Path | None = None, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m ledger ARGS`` in ``cwd`` with this checkout's environment and ``env``: its
    exit status and output. Forked from a server that has imported ledger already
    (tests/_forkserver.py: the same run, without 0.2 s of start-up); the tests of what a
    started process does (signals, pipes, import costs) use ``start_ledger``."""
    import _forkserver

    full = subprocess_env(**env)
    done = _forkserver.run(
        list(args), os.fspath(cwd or os.getcwd()), full, subprocess_env(), timeout=timeout
    )
    if done is not None:
        return done
    return start_ledger(*args, cwd=cwd, timeout=timeout, **env)


def new_project(root: Path) -> Path:
    """``root``, a new folder (its parent exists), with an empty ledger in it, as
    ``init_ledger`` makes it: the project most tests start from."""
    root.mkdir()
    init_ledger(root)
    return root


def init_ledger(cwd: Path) -> Path:
    """Makes the ledger ``ledger init`` makes when started in ``cwd`` (``$LEDGER_DIR``, else the
    nearest ``.ledger`` above ``cwd``, else ``.ledger`` at its git root or in it), in this process,
    and returns its folder: a set-up without a child's start-up (0.4 s of a worker's time, and a
    few hundred set-ups do it). The tests of ``ledger init`` itself start the command."""
    import contextlib

    from ledger.store import Store, find_ledger_dir

    with contextlib.chdir(cwd):
        root = find_ledger_dir(for_init=True)
    store = Store.init(root)
    store.check_writable()
    return store.root


def require_component(found: object, what: str, install: str) -> None:
    """Skip a test whose external component is missing, except on CI (``CI=true``): there
    ``.ci/run`` installs it, so its absence means a broken install step and the test fails."""
    import pytest

    if found:
        return
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{what} is missing on CI, where .ci/run installs it ({install})")
    pytest.skip(f"{what} is not installed: {install}")


def require_module(name: str, install: str = "make install") -> Any:
    """``pytest.importorskip`` that fails on CI instead, where ``make install`` provides every
    extra: a package missing there is a broken install step, not a test to skip."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        require_component(None, f"the Python package {name}", install)


# Root reads and writes through any file mode: a child run under ``setpriv`` without these
# capabilities sees permissions as a user would (tests of "permission denied" paths).
SETPRIV = shutil.which("setpriv")
_DROP_DAC = "-dac_override,-dac_read_search"


def run_without_dac_override(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` importing this checkout, as root without the capabilities that let
    root ignore file modes; needs ``SETPRIV``."""
    assert SETPRIV is not None
    drop = [f"--inh-caps={_DROP_DAC}", f"--bounding-set={_DROP_DAC}"]
    return subprocess.run(
        [SETPRIV, *drop, sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


# Every process a test starts carries this variable (set in os.environ for the test's
# duration, so it reaches children through subprocess_env and plain inheritance alike), with
# a value unique to the test (after those of the tests around it, when a test runs pytest
# itself): the guard in conftest.py finds them again by it, orphans and
# processes in sessions of their own included, and stops those still running.
PROCESS_MARK = "LEDGER_TEST_PROCESS_MARK"

# Helpers that the standard library or torch start once and keep for the life of the test
# process: not left behind by one test.
_LONG_LIVED = (
    "multiprocessing.resource_tracker",
    "multiprocessing.forkserver",
    "compile_worker",
    "ledger-test-forkserver",  # tests/_forkserver.py
)


def _long_lived(proc: Any) -> bool:
    import psutil

    try:
        return any(part in arg for arg in proc.cmdline() for part in _LONG_LIVED)
    except psutil.Error:
        return False


def processes_of(mark: str, since: float, known: set[int], shared: set[int]) -> list[Any]:
    """The running (not zombie) processes started by the test whose mark is ``mark``: this
    process's descendants that are not in ``known``, and any process created since ``since``
    whose environment carries the mark (a child whose parent died, or that left its tree);
    not those in ``shared`` or below one of them."""
    import psutil

    found: dict[int, psutil.Process] = {}
    try:
        for p in psutil.Process().children(recursive=True):
            if p.pid not in known:
                found[p.pid] = p
    except psutil.Error:
        pass
    for p in psutil.process_iter(["create_time"]):
        created = p.info.get("create_time")
        if p.pid in found or p.pid in known or not created or created < since - 1:
            continue
        try:
            if mark in p.environ().get(PROCESS_MARK, "").split():
                found[p.pid] = p
        except psutil.Error:  # gone, or another user's
            continue
    alive = []
    for p in found.values():
        try:
            if shared and shared.intersection(q.pid for q in [p, *p.parents()]):
                continue
            if p.status() != psutil.STATUS_ZOMBIE and not _long_lived(p):
                alive.append(p)
        except psutil.Error:
            continue
    return alive


def stop_processes(procs: list[Any], grace: float = 3.0) -> list[str]:
    """Wait up to ``grace`` seconds for ``procs`` to end, then SIGKILL the rest with all their
    descendants (taken first: once a parent is gone they can no longer be found from it).
    Returns one line per process that had to be killed."""
    import psutil

    _, alive = psutil.wait_procs(procs, timeout=grace)
    killed: list[str] = []
    victims: dict[int, psutil.Process] = {}
    for p in alive:
        try:
            for q in [p, *p.children(recursive=True)]:
                victims[q.pid] = q
        except psutil.Error:
            continue
    for p in victims.values():
        try:
            killed.append(f"pid {p.pid}: {' '.join(p.cmdline())[:200]}")
            p.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(list(victims.values()), timeout=10)
    return killed


def ends_with_this_process(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for a daemon that a test fixture starts: the kernel sends the daemon
    ``sig`` (SIGTERM by default) when the thread that started it ends (Linux's
    ``PR_SET_PDEATHSIG``). The fixture's teardown stops the daemon as before; this covers the
    pytest that never tears down, killed by SIGKILL or by a CI job's time limit, which left
    munged, slurmctld, slurmd and weed running for good. The daemon must not fork itself into
    the background (a forked child is not tied): start it in the foreground. Start it from the
    main thread, which lives as long as the process (pytest's fixtures run there). Elsewhere
    than Linux it does nothing."""
    if not sys.platform.startswith("linux"):
        return lambda: None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()

    def tie() -> None:
        prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the starter died before the tie was made
            os.kill(os.getpid(), sig)

    return tie


def inner_suite(root: Path, tests: str) -> Path:
    """A copy of this suite's conftest.py (and _support.py) in ``root``/tests, laid out as
    here (a session's fixtures belong to the root, above the conftest's folder), with
    ``tests`` as tests/test_inner.py: for an inner pytest run from ``root``. Returns the
    tests folder."""
    here = Path(__file__).resolve().parent
    inner = root / "tests"
    inner.mkdir()
    for name in ("conftest.py", "_support.py"):
        shutil.copy(here / name, inner / name)
    (inner / "test_inner.py").write_text(tests)
    return inner


def one_byte_changes(data: bytes, first: int = 0) -> Iterator[bytes]:
    """Every copy of ``data`` with one byte changed (the same size), from the last byte back to
    ``first``, 255 per byte. A test that needs a change hashing below (or above) a digest
    finds one within a few, whatever the digest: the last byte's 255 alone found none on one
    side for a digest in about 128 (7 December: the digest of a package a test made lands
    anywhere)."""
    for at in range(len(data) - 1, first - 1, -1):
        for flip in range(1, 256):
            yield data[:at] + bytes([data[at] ^ flip]) + data[at + 1 :]
