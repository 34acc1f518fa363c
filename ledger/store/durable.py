"""Writing many new files cheaply: unnamed temp files, and one durability barrier for all.

``ObjectStore.put_bytes`` makes each object durable on its own (fsync the temp file, rename,
fsync the directory). For thousands of small objects the per-file fsyncs are most of the time:
each one forces a journal commit. A batch writer instead writes every temp file, makes them all
durable at once, and only then gives them their names (docs/format.md, "Write ordering").

Three Linux facilities make that cheaper, each with a portable fallback:

- ``syncfs(2)`` writes back and commits everything dirty on one file system in one call. It is
  used only on the local file systems below, whose ``syncfs`` is known to reach stable storage
  and, from Linux 5.8, to report write-back errors, and only while the machine has little
  unwritten data besides the caller's (syncfs would wait for that too); otherwise (NFS, FUSE,
  overlay, ZFS, other systems, a busy machine) ``sync_files`` fsyncs each file.
- ``O_TMPFILE`` creates a temp file without a name, so the only directory entry a write makes
  is the object's own (``linkat``), and a writer killed midway leaves nothing behind. Where it
  is unsupported, or ``/proc`` is not mounted (``linkat`` needs ``/proc/self/fd``), writers
  use named temp files and ``rename``.
- ``O_DIRECT`` writes a temp file from the writer's buffer to the disk without first putting
  its bytes in the page cache (``direct_io``: local block-device file systems only). On a
  virtual machine whose host backs guest memory on first touch and takes back what the guest
  leaves free (where the benchmarks run), a page cache that grows pays a host page fault per
  4 KiB page: 38% of the CPU time of storing 5,000 inputs of 40 kB went to that copy. It
  also leaves the page cache to the training data. Where the open or the first write
  refuses it, that folder is written through the page cache from then on.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import sys
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from .atomic import fsync_dir

__all__ = [
    "current_umask",
    "direct_io",
    "link_named",
    "link_unnamed",
    "open_unnamed",
    "others_dirty",
    "refuse_direct",
    "sync_dirs",
    "sync_files",
    "sync_filesystem",
]

# statfs(2) f_type of the file systems whose syncfs makes all data and metadata durable.
_SYNCFS_SAFE = {
    0xEF53: "ext2/3/4",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0xF2F52010: "f2fs",
    0x01021994: "tmpfs",  # nothing there survives a reboot anyway
}
# Unwritten data of others that a syncfs may wait for, beyond the caller's own.
_DIRTY_SLACK = 64 << 20
_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400

# statfs(2) f_type of the local block-device file systems where O_DIRECT writes go from the
# caller's buffer to the disk (``direct_io``).
_DIRECT_FS = {0xEF53, 0x58465342, 0x9123683E, 0xF2F52010}
_O_DIRECT = getattr(os, "O_DIRECT", 0)

_libc: ctypes.CDLL | None = None
_unnamed_ok: dict[str, bool] = {}
_direct_ok: dict[str, bool] = {}
_lock = threading.Lock()


def _c() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform == "linux":
        with contextlib.suppress(OSError):
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _fs_type(path: Path, libc: ctypes.CDLL) -> int | None:
    buf = ctypes.create_string_buffer(256)  # struct statfs: f_type (a C long) comes first
    if libc.statfs(os.fsencode(path), buf) != 0:
        return None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def sync_filesystem(path: Path) -> bool:
    """Make everything written on ``path``'s file system durable with one ``syncfs``; False
    (nothing done) where that is not known to be enough: then fsync each file instead."""
    libc = _c()
    if libc is None or not hasattr(libc, "syncfs"):
        return False
    if _fs_type(path, libc) not in _SYNCFS_SAFE:
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            if err == errno.ENOSYS:
                return False
            raise OSError(err, f"syncfs {path}: {os.strerror(err)}")
    finally:
        os.close(fd)
    return True


def others_dirty(written: int) -> bool:
    """Whether the machine has much more unwritten data than the ``written`` bytes of ours:
    ``syncfs`` would wait for all of it (a training job's checkpoint, say), an fsync of each
    of our files only for ours. /proc/meminfo counts every file system, so this errs on the
    side of fsyncs."""
    try:
        with open("/proc/meminfo", "rb") as f:
            info = f.read()
    except OSError:
        return True
    pending = 0
    for line in info.splitlines():
        if line.startswith((b"Dirty:", b"Writeback:")):
            pending += int(line.split()[1]) * 1024
    return pending > written + _DIRTY_SLACK


def sync_files(fds: Sequence[int], dir: Path, workers: int, written: int) -> bool:
    """Make the content of every open file ``fds`` (all on ``dir``'s file system, ``written``
    bytes in all) durable: one ``syncfs`` where it is enough and little else waits to be
    written, else ``fdatasync`` of each, from ``workers`` threads (concurrent fsyncs share
    journal commits). True when it was a ``syncfs``: then everything written on that file
    system before the call (names too) is durable as well."""
    if not fds:
        return False
    if not others_dirty(written) and sync_filesystem(dir):
        return True
    if len(fds) == 1 or workers <= 1:
        for fd in fds:
            os.fdatasync(fd)
        return False
    with ThreadPoolExecutor(workers, thread_name_prefix="ledger-sync") as pool:
        list(pool.map(os.fdatasync, fds))
    return False


def sync_dirs(dirs: Collection[Path], root: Path, pool: Executor) -> None:
    """Make the entries created or removed in ``dirs`` (all on ``root``'s file system)
    durable: one ``syncfs`` where it is enough and little else waits to be written (a few
    hundred directory fsyncs each flush the disk's cache), else an fsync of each directory,
    on ``pool``'s threads."""
    if not dirs:
        return
    if not others_dirty(0) and sync_filesystem(root):
        return
    list(pool.map(fsync_dir, sorted(dirs)))


def current_umask() -> int | None:
    """This process's umask, read without changing it (``/proc/self/status``, Linux 4.7 and
    later); None where it cannot be read that way."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def direct_io(dir: Path) -> bool:
    """Whether temp files in ``dir`` should be written around the page cache (``O_DIRECT``):
    on a local file system of a block device that takes it (ext4, xfs, btrfs, f2fs), until
    a write there was refused (``refuse_direct``). Elsewhere (tmpfs, network and FUSE file
    systems, other platforms) O_DIRECT is missing, refused or means something else."""
    key = os.fspath(dir)
    ok = _direct_ok.get(key)
    if ok is None:
        libc = _c()
        fs = _fs_type(dir, libc) if libc is not None and _O_DIRECT else None
        ok = _direct_ok[key] = fs in _DIRECT_FS
    return ok


def refuse_direct(dir: Path) -> None:
    """Write temp files in ``dir`` through the page cache from now on: O_DIRECT was refused
    there (at the open, or at a first aligned write)."""
    _direct_ok[os.fspath(dir)] = False


def open_unnamed(
    dir: Path, mode: int = 0o444, umask: int | None = None, direct: bool = False
) -> int | None:
    """A new temp file in ``dir`` without a name (``O_TMPFILE``), open for writing, with
    permissions ``mode`` whatever the umask; None where the platform or file system cannot
    make one and also give it a name later. ``umask``: the process's, read by a caller that
    opens many (``current_umask``), which saves an ``fstat`` of each; None: each is checked.
    ``direct``: open it with ``O_DIRECT`` if ``direct_io(dir)``; where the open refuses it,
    without (and ``dir`` is written through the page cache from then on). A caller that asks
    for it must write as if it were on, since it may be: aligned buffer, offset and length."""
    key = os.fspath(dir)
    ok = _unnamed_ok.get(key)
    if ok is False:
        return None
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or _c() is None:
        _unnamed_ok[key] = False
        return None
    extra = _O_DIRECT if direct and ok and direct_io(dir) else 0  # never in the probe
    try:
        fd = os.open(dir, flag | os.O_WRONLY | extra, mode)
    except OSError as e:
        if extra and e.errno == errno.EINVAL:  # O_DIRECT refused, O_TMPFILE known to work
            refuse_direct(dir)
            return open_unnamed(dir, mode, umask)
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            _unnamed_ok[key] = False
            return None
        raise
    if ok is None:
        # The first file here is a probe: once named and unnamed again it cannot be linked.
        usable = _probe(fd, dir)
        os.close(fd)
        return open_unnamed(dir, mode, umask, direct) if usable else None
    if umask is None:
        if os.fstat(fd).st_mode & 0o7777 != mode:  # the umask took bits away (costlier: chmod)
            os.fchmod(fd, mode)
    elif umask & mode:
        os.fchmod(fd, mode)
    return fd


def _probe(fd: int, dir: Path) -> bool:
    """Whether an unnamed file can be given a name here (``/proc`` mounted, ``linkat``)."""
    key = os.fspath(dir)
    with _lock:
        if key in _unnamed_ok:
            return _unnamed_ok[key]
        name = dir / f".probe-{os.getpid()}-{threading.get_ident()}"
        try:
            ok = link_unnamed(fd, name)
        except OSError:
            ok = False
        if ok:
            os.unlink(name)
        _unnamed_ok[key] = ok
        return ok


def link_named(tmp: str | Path, path: str | Path) -> bool:
    """Give the complete temp file ``tmp`` the name ``path`` too (a hard link); False if
    ``path`` exists: it is never replaced. The caller removes ``tmp`` after either. Of two
    writers of one object exactly one gets True, which a check for ``path`` followed by a
    rename cannot promise (both can find it missing, and both report the write as new).
    Where the file system has no hard links, it falls back to that check and rename."""
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
            raise
    if os.path.lexists(path):
        return False
    os.replace(tmp, path)
    return True


def link_unnamed(fd: int, path: str | Path) -> bool:
    """Give the unnamed file ``fd`` the name ``path``; False if ``path`` exists (the content
    is never replaced)."""
    libc = _c()
    if libc is None:
        raise OSError(errno.ENOSYS, "linkat through /proc needs Linux's C library")
    src = f"/proc/self/fd/{fd}".encode()
    if libc.linkat(_AT_FDCWD, src, _AT_FDCWD, os.fsencode(path), _AT_SYMLINK_FOLLOW) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        return False
    raise OSError(err, os.strerror(err), os.fspath(path))
