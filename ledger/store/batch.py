"""Store many small files: each read once, all made durable together, then published.

``ObjectStore.put_file`` makes each object durable on its own: fsync the temp file, rename it,
fsync its directory. For thousands of small inputs those fsyncs are most of the time (each
forces a journal commit, and every create waits behind the commits). Here, for each batch:

1. **stage**: from a pool, each file is read once, hashed, judged for compression and written
   to a temp file (unnamed where the platform allows, ``ledger.store.durable``), not fsynced:
   its whole blocks with O_DIRECT where the file system takes it (``durable.direct_io``),
   straight from the buffer it was read into, the rest through the page cache;
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
import errno
import fcntl
import mmap
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
    direct_io,
    link_named,
    link_unnamed,
    open_unnamed,
    others_dirty,
    refuse_direct,
    sync_dirs,
    sync_files,
)
from .objects import (
    MIN_COMPRESS,
    MIN_SAVING,
    ZSTD_LEVEL,
    ObjectStore,
    head_pays,
    header_for,
)

__all__ = ["SMALL", "put_files"]

# Files up to this size are staged in one read; larger ones go through ``put_stream``.
SMALL = 1 << 20
# Threads that read, hash and write (the GIL is released for I/O, BLAKE3 and zstd).
_WORKERS = 4
# Files staged at once: each holds an open descriptor until it is published.
_BATCH = 4096
# Objects this large or larger are written with O_DIRECT where the file system takes it
# (``durable.direct_io``): their whole 4 KiB blocks go from the thread's buffer to the disk
# without growing the page cache. A smaller object has no whole block to write that way.
# Storing 5,000 inputs of 40 kB on this project's 2-core VM: 0.76-0.81 s a run direct,
# 0.73-0.86 s through the page cache on a fresh machine, 0.87-2.5 s on one whose page cache
# had grown into memory the host had not backed (measured by hand, not by the bench).
DIRECT_MIN = 4096
# O_DIRECT wants the buffer, the file offset and the length aligned to the device's logical
# block; 4 KiB covers 512-byte and 4 KiB devices.
_ALIGN = 4096
# A thread's buffer (page-aligned, by mmap): the object's bytes from offset 0 (the header,
# ``objects.header_for``, then the payload: an aligned start, which O_DIRECT needs), and a
# file's bytes read at ``_READ``, then moved to the payload's offset (1, or ``PAGE`` for
# content of ``ALIGN_MIN`` bytes or more). Copies whose source and destination lie at nearly
# the same offset in their 4 KiB pages, but not the same, run at a third of the speed
# (the CPU's 4K aliasing): reading 40 kB from the page cache straight to offset 1 took
# 16 us; to an offset half a page away 5 us, and the move from there to offset 1 1 us
# (from an aligned offset: 12 us). A write into the page cache is fastest from an address
# at the same page offset as the file's: 18 us for 40 kB, against 27 us for a codec byte
# and then the payload (``writev``).
_READ = SMALL + _ALIGN + _ALIGN // 2
_BUFFER = _READ + SMALL + _ALIGN
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


def _buffer() -> mmap.mmap:
    """This thread's buffer (``_BUFFER``), kept: a fresh 1 MiB allocation per file, mapped
    and unmapped, cost more than reading 40 kB."""
    buf: mmap.mmap | None = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = mmap.mmap(-1, _BUFFER)
    return buf


def _read_small(fd: int, buf: mmap.mmap, size: int | None) -> int:
    """Read up to ``SMALL + 1`` bytes into ``buf`` at ``_READ``: all of a small file, or
    enough to know it is not small; returns how many. ``size``, the file's size when it was
    digested: a first read that returns exactly that many bytes ends the file (a regular file
    reads short only at its end), which saves the second read that finds the end (one
    syscall, and one hand-over of the GIL, a file). A file of another size is read to its
    end, as without ``size``."""
    view = memoryview(buf)[_READ : _READ + SMALL + 1]
    n = 0
    while n <= SMALL and (got := os.readv(fd, [view[n:]])):
        n += got
        if n == size:
            break
    return n


def _pwrite_all(fd: int, view: memoryview, at: int) -> None:
    """Write all of ``view`` at offset ``at`` (a short write of a regular file: rare, but
    legal)."""
    while view:
        n = os.pwrite(fd, view, at)
        if n <= 0:
            raise OSError(errno.EIO, f"write returned {n}")
        view, at = view[n:], at + n


def _write_object(fd: int, buf: mmap.mmap, total: int, direct: bool, tmp_dir: Path) -> None:
    """Write ``buf``'s first ``total`` bytes (header and payload) to the empty temp file
    ``fd``. ``direct``: ``fd`` may have been opened with O_DIRECT: its whole blocks are
    written that way (an aligned buffer, offset and length), the last partial block through
    the page cache, O_DIRECT turned off first. Padding the tail to a block and cutting the
    file with ``ftruncate`` instead makes the file system read that block back from the
    disk to zero it (a synchronous read a file). A refusal at the first write (the device's
    alignment) turns O_DIRECT off for ``tmp_dir`` and writes it all through the page cache."""
    view = memoryview(buf)[:total]
    done = 0
    if direct:
        head = total - total % _ALIGN
        try:
            while done < head:
                n = os.pwrite(fd, view[done:head], done)
                if n <= 0:
                    raise OSError(errno.EIO, f"write returned {n}")
                done += n
                if done % _ALIGN:  # a short write off a block boundary: the rest buffered
                    break
        except OSError as e:
            if e.errno != errno.EINVAL or done:
                raise
            refuse_direct(tmp_dir)
        if done < total:
            fcntl.fcntl(fd, fcntl.F_SETFL, 0)  # none of the flags it sets is ours but O_DIRECT
    _pwrite_all(fd, view[done:], done)


def _stage(
    objects: ObjectStore, path: str, size: int | None, sync_each: bool, umask: int | None
) -> _Staged:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    buf = _buffer()
    try:
        n = _read_small(fd, buf, size)
        if n > SMALL:
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(os.dup(fd), "rb") as f:
                return objects.put_stream(f), None, None, 0
    finally:
        os.close(fd)
    data = memoryview(buf)[_READ : _READ + n]
    # Not checked against the store here: the caller skips the ids it knows are stored, and
    # an object found at naming time is touched instead (``_publish``).
    oid = hash_bytes(data)
    packed = b""
    if n >= MIN_COMPRESS and head_pays(data, _compressor()):
        packed = _compressor().compress(data)
        if len(packed) > n * (1 - MIN_SAVING):
            packed = b""
    head = header_for(len(packed) if packed else n, compressed=bool(packed))
    total = len(head) + (len(packed) if packed else n)
    if packed:
        buf[len(head) : total] = packed
    else:
        buf.move(len(head), _READ, n)
    buf[: len(head)] = head
    name: Path | None = None
    direct = total >= DIRECT_MIN and direct_io(objects.tmp_dir)
    out = open_unnamed(objects.tmp_dir, umask=umask, direct=direct)
    if out is None:
        out, tmp = tempfile.mkstemp(dir=objects.tmp_dir, prefix="obj-")
        name, direct = Path(tmp), False
    try:
        if name is not None:
            os.fchmod(out, 0o444)
        _write_object(out, buf, total, direct, objects.tmp_dir)
        if sync_each:
            os.fdatasync(out)
    except BaseException:
        _discard((oid, out, name, 0))
        raise
    return oid, out, name, total


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
    final = objects.name_of(oid)
    if name is None:
        if fd is None:
            raise TypeError(f"staged object {oid} has neither a name nor a file")
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
    objects.writing()
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
        fans: dict[str, list[_Staged]] = {}
        for s in written:
            fans.setdefault(os.path.dirname(objects.name_of(s[0])), []).append(s)
        made: set[Path] = set()  # every folder created, and the folders holding them
        for fan in fans:
            made |= _make_dirs(Path(fan), objects.root)

        def publish(fan: str) -> None:
            for s in fans[fan]:
                _publish(objects, s)

        # 4. The names are made durable by the caller (each fan once, or one syncfs), or by
        # the next batch's syncfs: the folders holding them, and the folder above any new one.
        dirs |= {Path(fan) for fan in fans} | made
        # An unnamed temp file is named with one linkat, 8 us on a local file system: handing
        # fans to the pool's threads cost more than it saved (4,096 names: 0.070 s in the
        # pool, 0.041 s in this thread). A named one (a file system without O_TMPFILE, maybe
        # on a network) takes a link and an unlink each: the pool overlaps their round trips.
        if any(s[2] is not None for s in written):
            list(pool.map(publish, fans))
        else:
            for fan in fans:
                publish(fan)
    finally:
        for s in written:
            _discard(s)
    return [s[0] for s in staged]
