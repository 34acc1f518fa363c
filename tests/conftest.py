from __future__ import annotations

import itertools
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _support import PROCESS_MARK, processes_of, stop_processes

from ledger.store import Store

_tests = itertools.count()


def _terminal_signals() -> None:
    """The children the tests start get the signal dispositions a terminal gives: a suite
    started under `nohup` (SIGHUP ignored) or with `&` from a script (SIGINT and SIGQUIT
    ignored) would pass the ignoring on, and a test that interrupts a `ledger replay` would
    wait for a process that cannot be interrupted (seen: test_replay_interrupt's SIGHUP case,
    240 s, in a suite started with nohup). Runs in every process that loads this conftest
    (the xdist workers too)."""
    for name, handler in (
        ("SIGINT", signal.default_int_handler),
        ("SIGHUP", signal.SIG_DFL),
        ("SIGQUIT", signal.SIG_DFL),
    ):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, handler)


_terminal_signals()


def _this_python_first_on_path() -> None:
    """``python`` and ``python3`` in the commands the tests record, and ``ledger``, are this
    Python's, as in an activated virtual environment. ``make test PYTHON=.venv/bin/python``
    (not activated) ran pytest in the environment but each recorded ``python train.py`` on
    the first ``python`` on PATH: on a fresh machine one without torch or typer (7 December:
    6 tests failed), and on a machine with both, a record of the wrong interpreter. Its folder
    goes first on PATH when it has both names; otherwise a folder of two wrappers that exec
    this Python. Runs in every process that loads this conftest (a worker inherits PATH from
    the first and finds the folder there already)."""
    import hashlib
    import shlex
    import tempfile

    exe = sys.executable
    here = Path(exe).parent
    if not all((here / n).is_file() for n in ("python", "python3")):
        digest = hashlib.sha256(exe.encode()).hexdigest()[:16]
        here = Path(tempfile.gettempdir()) / f"ledger-tests-python-{digest}"
        here.mkdir(exist_ok=True)
        for name in ("python", "python3"):
            wrapper = here / name
            text = f'#!/bin/sh\nexec {shlex.quote(exe)} "$@"\n'
            if not wrapper.is_file() or wrapper.read_text() != text:
                part = here / f".{name}.{os.getpid()}"
                part.write_text(text)
                part.chmod(0o755)
                part.replace(wrapper)
    path = os.environ.get("PATH", "").split(os.pathsep)
    if path[:1] != [str(here)]:
        os.environ["PATH"] = os.pathsep.join([str(here), *path])


_this_python_first_on_path()

# pytest-xdist's workers run with COLUMNS=80 and LINES=24 in their environment, and tables fit
# COLUMNS even when piped (ledger._columns): without this, every `ledger` a test starts under
# `-n` would print 80-column tables while the same test run alone prints them whole. Tests of
# the width set COLUMNS themselves (tests/ui/test_ls_width.py).
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


_CALL_PASSED = pytest.StashKey[bool]()


# Processes started by fixtures wider than a test (a server for the session, say), with all
# their descendants: shared, so no test owns them.
_SHARED: set[int] = set()


class _SharedProcesses:
    """Notes what a fixture wider than a test starts. A plugin registered for the whole run:
    a session's fixtures belong to the root, above this conftest's folder, where this
    conftest's own hooks are not called."""

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[object]) -> object:
        if fixturedef.scope == "function":
            return (yield)
        import psutil

        me = psutil.Process()
        before = {p.pid for p in me.children(recursive=True)}
        mark = os.environ.pop(PROCESS_MARK, None)  # set up on the fly, inside a test
        try:
            return (yield)
        finally:
            if mark is not None:
                os.environ[PROCESS_MARK] = mark
            _SHARED.update(p.pid for p in me.children(recursive=True) if p.pid not in before)


class _CachedRewrites:
    """pytest caches each test module it rewrites for assertions (``__pycache__/*-pytest-*.pyc``)
    unless ``sys.dont_write_bytecode`` is set, as PYTHONDONTWRITEBYTECODE (.ci/run) sets it:
    then every worker rewrote all test modules at every run (17.6 s of CPU for a collection,
    9.5 s with the cache). Writing is allowed during collection only, in the runs of
    scripts/test.sh (``LEDGER_TEST_CACHE_REWRITES=1``), which compiles ledger's own sources
    first; the tests themselves run as the environment says, and the mutation harness's runs,
    which write mutated sources, keep writing nothing."""

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> object:
        saved = sys.dont_write_bytecode
        sys.dont_write_bytecode = False
        try:
            return (yield)
        finally:
            sys.dont_write_bytecode = saved


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_SharedProcesses(), "ledger-shared-processes")
    if os.environ.get("LEDGER_TEST_CACHE_REWRITES") == "1":
        config.pluginmanager.register(_CachedRewrites(), "ledger-cached-rewrites")


@pytest.fixture(autouse=True)
def _stops_its_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test stops the processes it started: whatever is still running when it ends,
    passed or failed, is killed with its descendants here. A test that passed yet left one
    running fails (it would leak on every run, and its ResourceWarning would fail another)."""
    import psutil

    mark = f"{os.getpid()}-{next(_tests)}"
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    since = time.time()
    saved = os.environ.get(PROCESS_MARK)
    os.environ[PROCESS_MARK] = f"{saved} {mark}" if saved else mark  # an inner pytest's too
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(PROCESS_MARK, None)
        else:
            os.environ[PROCESS_MARK] = saved
    left = processes_of(mark, since, before, _SHARED)
    killed = stop_processes(left) if left else []
    if killed and request.node.stash.get(_CALL_PASSED, False):
        pytest.fail(
            "the test left processes running (stop them in a finally or a fixture):\n"
            + "\n".join(killed),
            pytrace=False,
        )


def _dispositions() -> dict[signal.Signals, object]:
    """What each catchable signal does in this process now (None: a handler set outside
    Python, which Python cannot put back and no test sets)."""
    out: dict[signal.Signals, object] = {}
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            out[signal.Signals(sig)] = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
    return out


def _process_wide(handler: object) -> bool:
    """A handler a library installs once per process by design, and keeps: torch's DataLoader
    sets a SIGCHLD handler (chained to the one before) at its first iterator with workers, and
    never sets it again, so putting the old one back would take worker-death detection away
    from every later test of the worker."""
    return getattr(handler, "__module__", None) == "torch.utils.data._utils.signal_handling"


# Environment variables a library sets for the rest of its process, by design, and reads
# again later: put back, they would undo its set-up for every later test of the worker.
# torch's inductor names its cache folder and passes a pointer to its compiled code's
# threads; Lightning's import turns on the NVML-based CUDA check.
_LIBRARY_ENV_PREFIXES = ("TORCHINDUCTOR_", "_TORCHINDUCTOR_")
_LIBRARY_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK"}


def _library_env(name: str) -> bool:
    return name in _LIBRARY_ENV or name.startswith(_LIBRARY_ENV_PREFIXES)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.fixture(autouse=True)
def _restores_the_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test leaves the signal handlers, the environment variables, the working directory
    and the umask as it found them (monkeypatch and tmp_path's chdir do): whatever it changed
    is put back here, passed or failed, and a test that passed yet changed one fails. Each
    would outlive the test in its xdist worker and make a later test's outcome depend on which
    tests ran before it there: `mutation.main()`'s SIGTERM handler, called in-process by a
    test, made test_signal_default_is_untouched fail on a fresh clone at 605ad48."""
    handlers, env, cwd, mask = _dispositions(), dict(os.environ), os.getcwd(), _umask()
    yield
    changed: list[str] = []
    for sig, handler in _dispositions().items():
        if handler is handlers.get(sig) or _process_wide(handler):
            continue
        changed.append(f"{sig.name} -> {handler!r}")
        if handlers.get(sig) is not None:
            signal.signal(sig, handlers[sig])  # type: ignore[arg-type]
    now = dict(os.environ)
    for name in sorted(set(env) | set(now)):
        if env.get(name) == now.get(name) or name == "PYTEST_CURRENT_TEST":
            continue
        if _library_env(name):
            continue  # (kept as the library left it)
        changed.append(f"${name}: {env.get(name)!r} -> {now.get(name)!r}")
        if name in env:
            os.environ[name] = env[name]
        else:
            os.environ.pop(name, None)
    if os.getcwd() != cwd:
        changed.append(f"working directory: {cwd} -> {os.getcwd()}")
        os.chdir(cwd)
    if _umask() != mask:
        changed.append(f"umask: {mask:04o} -> {_umask():04o}")
        os.umask(mask)
    if changed and request.node.stash.get(_CALL_PASSED, False):
        pytest.fail(
            "the test left the process changed (use monkeypatch, or put it back in a "
            "finally): " + "; ".join(changed),
            pytrace=False,
        )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """Run the real entry point (``ledger.cli.app.main``) in-process, with its exit code."""
    from ledger.cli.app import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["ledger", *args])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
