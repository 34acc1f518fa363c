"""Store many small files: each read once, all made durable together, then published.

``ObjectStore.put_file`` makes each object durable on its own: fsync the temp file, rename it,
fsync its directory. For thousands of small inputs those fsyncs are most of the time (each
forces a journal commit, and every create waits behind the commits). Here, for each batch:

1. **stage**: from a pool, each file is read once, hashed, judged for compression and written
   to a temp file (unnamed where the platform allows, ``ledger.store.durable``), not fsynced;
2. **durable**: one barrier for the whole batch: ``syncfs`` on the store's file system where
   that is known to be enough, else ``fdatasync`` of every temp file; on a machine with much
   unwritten data of others (which ``syncfs`` would wait for) each temp file is instead
   fdatasynced by its worker as soon as it is written;
3. **publish**: each temp file gets its object's name (``linkat``, or ``rename``);
4. **directories**: the names made durable once for the whole call: one more ``syncfs``
   where that is enough (the next batch's content barrier counts), else an fsync of each
   fan directory that got a name.

The order that makes a crash harmless is unchanged (docs/format.md, "Write ordering"): an
object's name appears only after its content is durable, and the caller writes nothing that
refers to these objects before ``put_files`` returns. A writer killed before step 3 leaves no
object (and, with unnamed temp files, no temp file either).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zstandard

from .._hashing import hash_bytes
from .durable import (
    current_umask,
    link_named,
    link_unnamed,
    open_unnamed,
    others_dirty,
    sync_dirs,
    sync_files,
)
from .objects import (
    CODEC_RAW,
    CODEC_ZSTD,
    MIN_COMPRESS,
    MIN_SAVING,
    ZSTD_LEVEL,
    ObjectStore,
    head_pays,
)

__all__ = ["SMALL", "put_files"]

# Files up to this size are staged in one read; larger ones go through ``put_stream``.
SMALL = 1 << 20
# Threads that read, hash and write (the GIL is released for I/O, BLAKE3 and zstd).
_WORKERS = 4
# Files staged at once: each holds an open descriptor until it is published.
_BATCH = 4096
# Files staged by one task of the pool, at most: a task per file (a future, a queue hand-off
# and a thread wake-up each) cost a fifth of the CPU time of storing 5,000 files of 40 kB.
_CHUNK = 32

# One staged file: its id, the open temp file (None: a large file, stored by put_stream),
# the temp file's name (None for an unnamed one) and the bytes written to it.
_Staged = tuple[str, int | None, Path | None, int]

_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    # Making a compressor costs as much as compressing 40 kB: one per thread, reused.
    c: zstandard.ZstdCompressor | None = getattr(_local, "zstd", None)
    if c is None:
        c = _local.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def _read_small(fd: int, size: int | None) -> memoryview:
    """Up to ``SMALL + 1`` bytes: all of a small file, or enough to know it is not small.
    Read into this thread's buffer (valid until its next call): a fresh 1 MiB allocation
    per file, mapped and unmapped, cost more than reading 40 kB. ``size``, the file's size
    when it was digested: a first read that returns exactly that many bytes ends the file (a
    regular file reads short only at its end), which saves the second read that finds the
    end (one syscall, and one hand-over of the GIL, a file). A file of another size is read
    to its end, as without ``size``."""
    buf: bytearray | None = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = bytearray(SMALL + 1)
    view = memoryview(buf)
    n = 0
    while n <= SMALL and (got := os.readv(fd, [view[n:]])):
        n += got
        if n == size:
            break
    return view[:n]


def _write_all(fd: int, head: bytes, payload: bytes | memoryview) -> None:
    n = os.writev(fd, [head, payload])
    if n < len(head):  # a short write of a regular file: rare, but legal
        os.write(fd, head[n:])
        n = len(head)
    view = memoryview(payload)[n - len(head) :]
    while view:
        view = view[os.write(fd, view) :]


def _stage(
    objects: ObjectStore, path: str, size: int | None, sync_each: bool, umask: int | None
) -> _Staged:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        data = _read_small(fd, size)
        if len(data) > SMALL:
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(os.dup(fd), "rb") as f:
                return objects.put_stream(f), None, None, 0
    finally:
        os.close(fd)
    # Not checked against the store here: the caller skips the ids it knows are stored, and
    # an object found at naming time is touched instead (``_publish``).
    oid = hash_bytes(data)
    payload: bytes | memoryview = data
    codec = CODEC_RAW
    if len(data) >= MIN_COMPRESS and head_pays(data, _compressor()):
        packed = _compressor().compress(data)
        if len(packed) <= len(data) * (1 - MIN_SAVING):
            payload, codec = packed, CODEC_ZSTD
    name: Path | None = None
    out = open_unnamed(objects.tmp_dir, umask=umask)
    if out is None:
        out, tmp = tempfile.mkstemp(dir=objects.tmp_dir, prefix="obj-")
        name = Path(tmp)
    try:
        if name is not None:
            os.fchmod(out, 0o444)
        _write_all(out, bytes([codec]), payload)
        if sync_each:
            os.fdatasync(out)
    except BaseException:
        _discard((oid, out, name, 0))
        raise
    return oid, out, name, 1 + len(payload)


def _stage_some(
    objects: ObjectStore,
    paths: Sequence[str],
    sizes: Sequence[int | None],
    sync_each: bool,
    umask: int | None,
) -> tuple[list[_Staged], BaseException | None]:
    """``_stage`` each file of ``paths`` in turn: what was staged, and the error that stopped
    it (the caller raises it once it has every temp file, to drop them all)."""
    staged: list[_Staged] = []
    for path, size in zip(paths, sizes, strict=True):
        try:
            staged.append(_stage(objects, path, size, sync_each, umask))
        except BaseException as e:
            return staged, e
    return staged, None


def _discard(staged: _Staged) -> None:
    _, fd, name, _ = staged
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
    if name is not None:
        with contextlib.suppress(FileNotFoundError):
            name.unlink()


def _publish(objects: ObjectStore, staged: _Staged) -> None:
    """Give one durable temp file its object's name, unless the object is there already."""
    oid, fd, name, _ = staged
    final = objects.path_of(oid)
    if name is None:
        assert fd is not None
        if not link_unnamed(fd, final):  # stored meanwhile (a duplicate, or another writer)
            objects.touch(oid)
    elif not objects.touch(oid) and not link_named(name, final):
        objects.touch(oid)  # named by another writer since the check


def _make_dirs(fan: Path, root: Path) -> set[Path]:
    """Create ``fan`` and any missing folder above it up to ``root``; returns the folders
    whose entries changed (each new folder's parent), which must be fsynced."""
    changed: set[Path] = set()
    missing: list[Path] = []
    d = fan
    while not d.is_dir() and d != root:
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
            d.mkdir()
        changed.add(d.parent)
    return changed


def _batch_size() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _BATCH
    return max(16, min(_BATCH, (soft - 64) // 2))


def _room_for_descriptors(n: int) -> None:
    """Grow this process's descriptor table, in one step, to hold ``n`` more open files. The
    kernel grows it by doubling, and while other threads share it each growth waits for an
    RCU grace period with every thread that opens a file stalled behind it: a batch of
    thousands of open temp files grew it about seven times, from the pool's threads."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        fd = os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        top = fd + n if soft == resource.RLIM_INFINITY else min(fd + n, soft - 1)
        if top > fd:
            # The lowest free descriptor from ``top`` on: never one in use (dup2 would close it).
            os.close(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top))
    except OSError:  # out of descriptors: the batch will say so
        pass
    finally:
        os.close(fd)


def put_files(
    objects: ObjectStore, paths: Sequence[str], sizes: Sequence[int | None] | None = None
) -> list[str]:
    """Store each file of ``paths`` (regular files); returns their ids, in order. When it
    returns, every object is durable under its name. Each file is written to a temp file even
    if its object is stored already (then dropped): callers leave out the ids they know.
    ``sizes``: each file's expected size, if known (it saves a read a file; any size works)."""
    oids: list[str] = []
    if sizes is None:
        sizes = [None] * len(paths)
    elif len(sizes) != len(paths):
        raise ValueError(f"{len(sizes)} sizes for {len(paths)} paths")
    size = _batch_size()
    _room_for_descriptors(min(size, len(paths)) + 2 * _WORKERS)
    dirs: set[Path] = set()  # folders with new entries not known to be durable yet
    with ThreadPoolExecutor(_WORKERS, thread_name_prefix="ledger-put") as pool:
        try:
            for start in range(0, len(paths), size):
                end = start + size
                oids += _put_batch(objects, paths[start:end], sizes[start:end], pool, dirs)
        finally:
            # Even when a later batch failed: another writer may find (``touch``) and link
            # an object named by an earlier one.
            sync_dirs(dirs, objects.root, pool)
    return oids


def _put_batch(
    objects: ObjectStore,
    paths: Sequence[str],
    sizes: Sequence[int | None],
    pool: ThreadPoolExecutor,
    dirs: set[Path],
) -> list[str]:
    """Stage, make durable and name one batch; adds to ``dirs`` the folders whose new entries
    the caller must still make durable (and drops those a ``syncfs`` here made durable)."""
    # A busy machine (much unwritten data of others, which a syncfs would wait for): each
    # file is fdatasynced as it is written, overlapping the other workers' reads and writes.
    sync_each = others_dirty(0)
    umask = current_umask()  # once for the batch, not an fstat a file
    step = max(1, min(_CHUNK, len(paths) // (4 * _WORKERS)))
    futures = [
        pool.submit(
            _stage_some, objects, paths[i : i + step], sizes[i : i + step], sync_each, umask
        )
        for i in range(0, len(paths), step)
    ]
    staged: list[_Staged] = []
    failed: BaseException | None = None
    for future in futures:  # wait for all: collect every temp file, so none is left behind
        done, error = future.result()
        staged += done
        failed = failed or error
    written = [s for s in staged if s[1] is not None]
    try:
        if failed is not None:
            raise failed
        # 2. Durable content first: nothing gets a name before this returns. A syncfs also
        # makes the names given by the batches before this one durable.
        if not sync_each:
            fds = [fd for _, fd, _, _ in written if fd is not None]
            if sync_files(fds, objects.tmp_dir, _WORKERS, sum(s[3] for s in written)):
                dirs.clear()
        # 3. Names, fan directory by fan directory.
        fans: dict[Path, list[_Staged]] = {}
        for s in written:
            fans.setdefault(objects.path_of(s[0]).parent, []).append(s)
        made: set[Path] = set()  # every folder created, and the folders holding them
        for fan in fans:
            made |= _make_dirs(fan, objects.root)

        def publish(fan: Path) -> None:
            for s in fans[fan]:
                _publish(objects, s)

        # 4. The names are made durable by the caller (each fan once, or one syncfs), or by
        # the next batch's syncfs: the folders holding them, and the folder above any new one.
        dirs |= fans.keys() | made
        list(pool.map(publish, fans))
    finally:
        for s in written:
            _discard(s)
    return [s[0] for s in staged]
