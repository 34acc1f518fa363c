"""Staging directories of runs in flight: ``.ledger/staging/<run-id>/``.

The recorder (``ledger record``, ``ledger.start``) creates one per run before it writes any
object of the run, and holds an exclusive ``flock`` on its ``.lease`` file until the run is
sealed. The kernel drops the lock when the recorder dies, however it dies, so a staging dir
whose lease nobody holds was left by a recorder that is gone (docs/format.md, "Staging").

gc reads two things here: the start of every live run (objects written or reused since then
may be linked by a record not written yet, so gc keeps them), and the abandoned dirs it may
remove.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LEASE",
    "StagingDir",
    "open_staging",
    "release_staging",
    "scan_staging",
    "staging_state",
]

LEASE = ".lease"
# A staging dir without a lease file may be one whose recorder is creating it right now.
UNLEASED_MIN_AGE = 600.0


@dataclass(frozen=True)
class StagingDir:
    path: Path
    live: bool  # a recorder holds its lease
    started: float  # when the run began (the lease's mtime; the dir's without a lease)
    last_write: float  # newest mtime in it
    size: int  # bytes in it

    @property
    def run_id(self) -> str:
        return self.path.name


def open_staging(path: Path) -> int:
    """Create the staging dir ``path`` with its lease held; returns the lease descriptor.

    The lease file is locked before it gets its name, so no reader ever sees an unlocked
    lease of a live run.
    """
    path.mkdir(parents=True)
    tmp = path / f"{LEASE}.{os.getpid()}"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(tmp, path / LEASE)
    return fd


def release_staging(path: Path, fd: int | None, *, remove: bool = True) -> None:
    """Remove the staging dir (by default) and drop its lease."""
    if remove:
        shutil.rmtree(path, ignore_errors=True)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _held(lease: Path) -> bool | None:
    """Whether someone holds ``lease``; None if there is no lease file."""
    try:
        # O_NONBLOCK|O_NOFOLLOW: a FIFO or a link planted as a lease is never waited on.
        fd = os.open(lease, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:
        return False  # a link or a socket: no recorder holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return False


def _usage(path: Path) -> tuple[float, int]:
    newest, size = path.stat().st_mtime, 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                newest, size = max(newest, st.st_mtime), size + st.st_size
    return newest, size


def staging_state(path: Path) -> StagingDir | None:
    """One staging dir (or any folder made with ``open_staging``): whether its maker still
    holds it; None if it is not a plain folder or went away while we looked."""
    if not path.is_dir() or path.is_symlink():
        return None
    try:
        held = _held(path / LEASE)
        lease = path / LEASE
        started = (lease if held is not None else path).stat().st_mtime
        last, size = _usage(path)
    except FileNotFoundError:  # removed while we looked: its run was just sealed
        return None
    live = bool(held) or (held is None and time.time() - last < UNLEASED_MIN_AGE)
    return StagingDir(path, live, started, last, size)


def scan_staging(root: Path) -> list[StagingDir]:
    """Every staging dir under ``root`` (``.ledger/staging``), live or not."""
    if not root.is_dir():
        return []
    found = (staging_state(path) for path in sorted(root.iterdir()))
    return [s for s in found if s is not None]
