"""``python -m ledger ARGS`` without a Python start-up per call: a fork server for run_ledger.

Most of the CPU of a ``python -m ledger`` that a test starts is the interpreter's start-up and
ledger's imports (0.2-0.3 s of 0.3-0.5 s; a suite starts thousands). A test process starts one
server (lazily, once), which imports ``ledger.cli.app`` and the modules most commands import
(``PRELOAD``: pure Python and pydantic's core, nothing that starts a thread) and then, per call,
forks a process that takes the call's working directory, environment, argv (``sys.argv[0]``
the path of ``ledger/__main__.py``, as ``-m`` makes it), its own stdout and stderr files and the
test process's stdin, runs ``ledger`` as ``-m`` does (``runpy``), and ends as the interpreter does:
SystemExit's code, a traceback and 1 for an uncaught exception, non-daemon threads joined,
atexit handlers run, the streams flushed (120 if that fails).

What a forked call does not get that a started one does: its own hash seed (every call from
one server shares it) and a fresh import of ledger's modules (they are imported once, in the
server, under the server's environment; ledger reads its environment when called, not at
import; a module not preloaded is looked up from the call's working directory first, as
``-m`` does). Calls whose environment changes a ``PYTHON*`` or locale variable (import timing, a
PYTHONPATH of their own), or whose working directory is missing, start Python as before, and
``LEDGER_TEST_FORKSERVER=0`` turns the server off. Each call is forked twice (a waiter in the
server forks the call, waits for it and writes its pid and status to a pipe of the call's own),
so calls from several threads of a test wait each for its own; the server is stopped and waited
for when the test process exits, so every call's CPU counts in the test process's children.
"""

from __future__ import annotations

import array
import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

# In the server's command line, so the process guard of tests/conftest.py takes it (and the
# forked calls, which share its command line while they run) for a helper that outlives a test.
MARK = "ledger-test-forkserver"

_SERVER = r"""
import array, json, os, runpy, signal, socket, sys, threading, traceback

sock = socket.socket(fileno=int(sys.argv[1]))
import importlib
import ledger.cli.app, ledger.cli.entry  # what every call imports, imported once
# and what most commands import on their way (pure Python and pydantic's core: nothing that
# starts a thread, such as numpy's BLAS, which a fork would leave without its threads)
for name in PRELOAD:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
assert threading.active_count() == 1 and "numpy" not in sys.modules and "torch" not in sys.modules


def _code(e):
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    try:
        print(e.code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _call(req, out, err):
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    for fd, path in ((1, out), (2, err)):
        new = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(new, fd)
        os.close(new)
    sys.argv = ["-m", *req["args"]]
    code, interrupted = 0, False
    try:
        runpy._run_module_as_main("ledger", alter_argv=True)
    except SystemExit as e:
        code = _code(e)
    except KeyboardInterrupt:
        traceback.print_exc()
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except SystemExit as e:
        code = _code(e)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


while True:
    fds = array.array("i")
    try:
        msg, anc, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(fds.itemsize))
    except OSError:
        break
    if not msg:
        break
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    reply = fds[0]
    req = json.loads(msg)
    sys.stdout.flush()
    sys.stderr.flush()
    waiter = os.fork()
    if waiter == 0:
        try:
            sock.close()
            pid = os.fork()
            if pid == 0:
                os.close(reply)
                try:
                    _call(req, req["out"], req["err"])
                finally:
                    os._exit(1)
            os.write(reply, f"{pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            os.write(reply, f"{os.waitstatus_to_exitcode(status)}\n".encode())
        finally:
            os._exit(0)
    os.close(reply)
    while True:  # reap the waiters that are done
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done == 0:
            break
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""

# Modules that three or more of verify, record, show, ls, export, diff and tag import beyond
# ledger.cli.app (measured with -X importtime): 0.1-0.3 s more of each call's start-up.
# Then what the commands the tests call most import on their way (record, replay, verify,
# show, diff, export, tag; -X importtime): pure Python, pydantic models and rich, no thread,
# numpy or torch (asserted above). The indexer modules come first and in the order an Index
# imports them (ledger.index.db's INDEXER_MODULES), which is the order their indexers apply.
# 130 forked calls of 40 tests (test_replay_e2e, test_cli_json, test_cli_short_ids,
# tests/read; -m "not torch"; 2026-12-06 21:05 UTC, load 15-18): 22.0 -> 16.3 s of CPU, the
# whole run 35.1 -> 28.1 s.
PRELOAD = (
    "typer._adapters",
    "pydantic",
    "ledger.store",
    "ledger.store.repo",
    "ledger.store.log",
    "ledger.store.fold",
    "ledger.store.safe_read",
    "ledger.records",
    "ledger.records.plain",
    "ledger.index.db",
    "ledger.index.short_ids",
    "ledger.index._indexers",
    "ledger.run.find",
    "ledger.run.ids",
    "ledger.index.rows",
    "ledger.index.tables",
    "ledger.index.search",
    "ledger.index.curation",
    "ledger.records.run",
    "rich.console",
    "rich.markup",
    "ledger.cli._printer",
    "ledger.run.record",
    "ledger.capture.data",
    "ledger.capture.gitsource",
    "ledger.replay.engine",
    "ledger.replay.localize",
    "ledger.replay.material",
    "ledger.store.verify",
    "ledger.index.consistency",
    "ledger.index.checked",
    "ledger.run.show",
    "ledger.run.diff",
    "ledger.run.curate",
    "ledger.share.package",
)

_lock = threading.Lock()
_server: dict[str, Any] = {}


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen(
        [sys.executable, "-c", f"PRELOAD = {PRELOAD!r}\n{_SERVER}", str(theirs.fileno()), MARK],
        env=env,
        pass_fds=(theirs.fileno(),),
    )
    theirs.close()
    atexit.register(_stop)
    return proc, ours


def _stop() -> None:
    """Closes the server's socket and waits for it (and so for every call's CPU)."""
    with _lock:
        proc, sock = _server.pop("proc", None), _server.pop("sock", None)
        _server.pop("key", None)
    if sock is not None:
        sock.close()
    if proc is not None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _same_interpreter(env: dict[str, str], server_env: dict[str, str]) -> bool:
    """Whether a call with ``env`` would start Python as the server's environment did."""
    keys = {k for k in (*env, *server_env) if k.startswith(("PYTHON", "LC_")) or k == "LANG"}
    return all(env.get(k) == server_env.get(k) for k in keys)


def _decode(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` decodes a child's output: the locale's encoding,
    universal newlines."""
    import locale

    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _send(
    args: list[str], cwd: str, env: dict[str, str], base: dict[str, str], files: tuple[str, str]
) -> int | None:
    """Sends the call to this process's server (started with ``base`` if there is none yet)
    and returns the read end of the call's pipe; None where the call must start Python."""
    if os.environ.get("LEDGER_TEST_FORKSERVER", "1") == "0" or os.name != "posix":
        return None
    if not os.path.isdir(cwd) or not _same_interpreter(env, base):
        return None
    with _lock:
        if _server.get("gone") and _server.get("pid") == os.getpid():
            return None
        if _server.get("pid") != os.getpid():  # none yet, or a forked test process's parent's
            _server.clear()
            proc, sock = _start(base)
            _server.update(proc=proc, sock=sock, env=dict(base), pid=os.getpid())
        if not _same_interpreter(env, _server["env"]):
            return None
        r, w = os.pipe()
        try:
            request = {"args": args, "cwd": cwd, "env": env, "out": files[0], "err": files[1]}
            _server["sock"].sendmsg(
                [json.dumps(request).encode()],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [w]).tobytes())],
            )
        except OSError:  # the server is gone: this call, and the next, start Python
            os.close(r)
            _server["gone"] = True
            return None
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
    return r


def run(
    args: list[str], cwd: str, env: dict[str, str], base: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str] | None:
    """``subprocess.run([sys.executable, "-m", "ledger", *args], cwd=cwd, env=env,
    capture_output=True, text=True, timeout=timeout)`` through the server, started with the
    environment ``base``; None where the call must start Python itself (see the module
    docstring)."""
    argv = [sys.executable, "-m", "ledger", *args]
    with tempfile.TemporaryDirectory(prefix="ledger-call-") as folder:
        out, err = os.path.join(folder, "out"), os.path.join(folder, "err")
        for path in (out, err):
            open(path, "wb").close()
        r = _send(args, cwd, env, base, (out, err))
        if r is None:
            return None
        try:
            _, code = _wait(r, timeout)
        finally:
            os.close(r)
        stdout, stderr = _read(out), _read(err)
    if code is None:
        raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
    return subprocess.CompletedProcess(argv, code, _decode(stdout), _decode(stderr))


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _wait(r: int, timeout: float) -> tuple[int | None, int | None]:
    """The call's pid and exit status from its pipe; status None when ``timeout`` ran out
    (then the call is killed and its status read)."""
    deadline = time.monotonic() + timeout
    buf = b""
    pid: int | None = None
    killed = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 and not killed:
            if pid is None:
                raise RuntimeError("the fork server did not start the call")
            os.kill(pid, signal.SIGKILL)
            killed = True
        ready, _, _ = select.select([r], [], [], max(left, 0) if not killed else 30)
        if not ready:
            if killed:
                raise RuntimeError(f"the fork server's call {pid} did not end once killed")
            continue
        chunk = os.read(r, 64)
        if not chunk:
            raise RuntimeError("the fork server ended before the call")
        buf += chunk
        lines = buf.split(b"\n")
        if len(lines) >= 2 and pid is None:
            pid = int(lines[0])
        if len(lines) >= 3:
            return pid, None if killed else int(lines[1])
