"""Which files a recorded Python process opens for reading (``ledger/_hook/sitecustomize.py``
loads this by file path as ``_ledger_reads`` and calls ``install``).

An audit hook (``sys.addaudithook``) sees every ``open`` event: ``open()``, ``io.open``,
``pathlib``'s reads, ``io.open_code`` (imports) and ``os.open`` all raise it, and so do the
libraries that open files through them (``numpy.load``/``fromfile``/``memmap``, ``torch.load``
of a path, PIL). Each new path opened for reading only is appended, one per line (backslash
and newline escaped), to ``$LEDGER_RUN_DIR/reads/<pid>.txt`` at once (one ``write`` per
distinct path, unbuffered), so a killed run, or a forked worker that ends with
``os._exit``, keeps every path it had seen. The recorder reads the files at seal
(``ledger/capture/reads.py``).

It stays cheap: one comparison for every other audit event, and for an ``open`` a set lookup
before anything is written. Left out here: files opened with a write flag (and later reads of
a file this process opened for writing first), file descriptors, the interpreter's and
site-packages' own files, compiled bytecode, ``/proc``, ``/sys``, ``/dev`` and
the system folders (``/usr``, ``/lib``, ``/etc``...), and the ledger's own folders.

It cannot see: processes that are not Python (a shell, a C++ data loader), Python started
without ``site`` (``-S``, ``-I``) or with a ``PYTHONPATH`` that drops the hook, reads by C
code that opens files itself (h5py/HDF5, TensorFlow's file ops, Arrow's and ``cv2``'s readers),
and pages of a file mapped before the hook saw its ``open``. A path opened relative to a
``dir_fd`` is recorded relative to the working directory, and is dropped at seal if nothing is
there. It must not import ``ledger`` (the child's Python may not have it).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

_WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_SYSTEM = ("/proc/", "/sys/", "/dev/", "/usr/", "/lib/", "/lib64/", "/etc/", "/bin/", "/sbin/")
_STATE: dict[str, Any] = {"fd": None, "pid": 0, "dir": "", "skip": (), "cwd": ""}
_SEEN: set[str] = set()  # normalised paths
_RAW: set[str] = set()  # names as opened (relative ones with the working directory)


def _prefixes(run_dir: str, hook_dir: str) -> tuple[str, ...]:
    """Folders whose files are never the program's data: the interpreter's, site-packages,
    the ledger's own. A prefix that holds the working directory (a project inside a conda
    prefix) is not skipped."""
    import site  # already imported: it imported this hook

    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, run_dir}
    found.add(getattr(sys, "pycache_prefix", None) or "")
    found.add(os.path.dirname(os.__file__))  # the standard library
    found.add(os.path.dirname(hook_dir))  # ledger's own package
    with contextlib.suppress(Exception):  # some virtualenvs' site module lacks these
        found.update([*site.getsitepackages(), site.getusersitepackages()])
    ledger_dir = os.environ.get("LEDGER_DIR", "")
    if ledger_dir:
        found.add(ledger_dir)
    cwd = os.getcwd().rstrip("/") + "/"
    out = set(_SYSTEM)
    for p in found:
        if not p:
            continue
        p = os.path.abspath(p).rstrip("/") + "/"
        if p != "/" and not cwd.startswith(p):
            out.add(p)
    return tuple(sorted(out))


def _fd() -> int:
    """The append-only file of this process (a fork child opens its own)."""
    pid = os.getpid()
    if _STATE["pid"] != pid:
        os.makedirs(_STATE["dir"], exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        _STATE["fd"] = os.open(os.path.join(_STATE["dir"], f"{pid}.txt"), flags, 0o600)
        _STATE["pid"] = pid
    fd: int = _STATE["fd"]
    return fd


def _line(path: str) -> bytes:
    """One line: the path's bytes, with backslash and newline escaped (``\\``, ``\\n``)."""
    raw = path.encode("utf-8", "surrogateescape")
    return raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open":
        if event == "os.chdir":
            _STATE["cwd"] = ""  # looked up again at the next open (the chdir may fail)
        return
    try:
        path, _mode, flags = args
        if isinstance(path, int):
            return
        if not isinstance(path, str):
            path = os.fsdecode(path)
        rel = path[:1] != "/"
        cwd = (_STATE["cwd"] or _cwd()) if rel else ""
        key = f"{cwd}\0{path}" if rel else path
        if key in _RAW:  # the same name again: nothing to do
            return
        _RAW.add(key)
        path = os.path.normpath(os.path.join(cwd, path) if rel else path)
        if path in _SEEN:
            return
        _SEEN.add(path)  # a file written first and read later is this process's own
        if (
            (isinstance(flags, int) and flags & _WRITE)
            or path.startswith(_STATE["skip"])
            or path.endswith(".pyc")
        ):
            return
        os.write(_fd(), _line(path))
    except Exception:  # an audit hook's error would fail the program's open()
        pass


def _cwd() -> str:
    cwd = os.getcwd()
    _STATE["cwd"] = cwd
    return cwd


def install(run_dir: str, hook_dir: str) -> None:
    """Start recording this process's reads into ``run_dir/reads/``."""
    _STATE["dir"] = os.path.join(run_dir, "reads")
    _STATE["skip"] = _prefixes(run_dir, hook_dir)
    if hasattr(os, "register_at_fork"):
        # The child inherits the parent's set (those paths are already written) and must
        # write its new ones to its own file.
        os.register_at_fork(after_in_child=lambda: _STATE.update(pid=0))
    sys.addaudithook(_hook)
