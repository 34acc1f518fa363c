"""A save's new chunk objects, written without the hashing threads waiting for the disk.

``ObjectStore.put_bytes_new`` makes one object durable before it returns (write, fsync, rename,
fsync its directory). Save workers that called it sat in fsync, one chunk each, while other
chunks waited to be compared or hashed. Here a worker hashes a chunk, opens a temp file
(unnamed where the platform allows, ``store.durable``) and goes on with the next chunk; syncer
threads write each temp file, fsync it and only then give it its object's name. ``finish``
waits for them and fsyncs each directory that got a name once, not once per object.

The syncers write, not the workers: a worker that wrote its chunk waited for the disk (an
O_DIRECT write returns once the device has the bytes) while the chunks left to compare
waited for a worker. 200 MB with 10% changed, four runs of bench/bench_checkpoint.py's
rounds on 7 December (docs/benchmarks.md, round 6): a save after a save that replaced every
tensor took 1.50x its floor before (median; 37.8-41.8 ms), 1.36x with the syncers writing
(35.1-35.7 ms); the steady save 1.44x before, 1.30x after. These ratios move from day to day
(round 7: 1.44x and 1.41x for the same code). A raw payload is a view of the caller's memory,
unchanged until ``finish``; a compressed one is bytes of its own, written by the worker that
made it, so that queued jobs hold no more than one per worker.

Chunks the caller marks ``direct`` (io: those that changed at this save and at the one
before, which will likely change again), of ``DIRECT_MIN`` bytes and more, are written with
``O_DIRECT`` where the file system takes it (``_write_direct``): from a page-aligned buffer of
``_PIECE`` bytes, reused, so the chunk goes to the disk without first growing the page cache.
Any other chunk (saved for the first time, or changed once after a save that found it the
same) goes through the page cache, so that the next save compares with it there
(``reuse``) rather than reading it back from the disk: marking every changed chunk
direct made the save after one that replaced every tensor read 180 of 200 MB back from the
disk to compare them (0.18-0.24 s against 0.05-0.07 s from the page cache, issue #38).

On a virtual machine whose host backs guest memory on first touch and takes back what the
guest leaves free (the machine the benchmarks run on), a page cache that grows pays a host
page fault per 4 KiB page: 5 chunks of 8 MB written through the page cache and kept took
135-175 ms a round (110-150 ms of it in the kernel), with ``O_DIRECT`` 30-45 ms. Elsewhere
it costs about what a buffered write and fsync cost, and leaves the page cache to the
training data. A file system that refuses ``O_DIRECT`` (tmpfs before Linux 6.6, some FUSE
and network file systems) gets buffered writes, remembered per folder.

The syncer threads are one pool per process (``Pool``), started on first use and kept for the
next save: starting threads on every save cost page faults and start-up time on each one. A
forked child (a crash test's saver, a DataLoader worker) has none of its parent's threads; it
starts its own pool when it first saves.

The order that makes a crash harmless is ``put_bytes``'s (docs/format.md, "Write ordering"): a
name appears only after its content is durable, and the caller writes nothing that refers to
these objects before ``finish`` returns. A writer killed midway leaves complete objects, or
(unnamed) temp files that vanish with it.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import mmap
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import zstandard

from ..._hashing import hash_bytes
from ...store import ObjectStore
from ...store.atomic import fsync_dir
from ...store.durable import link_named, link_unnamed, open_unnamed
from ...store.objects import MIN_COMPRESS, MIN_SAVING, header_for
from ...store.pool import KeptPool, Pool

__all__ = [
    "LEVEL",
    "SAVING_BY_DEFAULT",
    "ChunkWriter",
    "Pool",
    "StagedObject",
    "Written",
    "compression_pays",
    "fsync_dirs",
]

# Tensor chunks are compressed at zstd level 1, not the store's 3: what float weights give up
# is the exponent bytes' entropy, which both levels code alike (randn + 4: 0.850 of the size
# at both), and level 1 takes about a quarter less CPU (9.3 vs 12.0 ms per 8 MB), on the
# save's critical path.
LEVEL = 1

# By default a chunk is compressed only when its sample shrinks by at least a third (zeros,
# masks, integer ids, sparse tensors), not at the store's 10%: what float weights give up is
# their exponent bytes (5-25% of the size), at 0.2-0.9 GB/s of one core (randn + 3, float32:
# 13% smaller, 38 ms per 8 MB; bfloat16 weights: 22%, 16 ms per 8 MB), which on a local disk
# costs the save more time than writing those bytes raw. ``save_checkpoint(compress=True)``
# takes the store's 10% rule instead.
SAVING_BY_DEFAULT = 1 / 3

# Objects in flight at once for one writer, each written, fsynced and named by one syncer:
# concurrent fsyncs share journal commits and keep the disk busy. With 4, a save that
# replaced every tensor of 200 MB (50 chunks through the page cache) took 225 ms, against
# 191 ms when the workers wrote and 4 syncers only fsynced; with 8, 193 ms.
_SYNCERS = 8
# Threads in the process's pool: a writer's syncers plus ``finish``'s directory fsyncs, and a
# second writer (a background save beside a foreground one) without waiting for all of the
# first's.
_POOL = 12
# Temp files written and not yet named: each holds a descriptor (and dirty pages) until then.
_PENDING = 16

# Payloads this large or larger are written with O_DIRECT (``_write_direct``); smaller ones
# through the page cache, where a synchronous device write per file would cost more.
DIRECT_MIN = 1 << 20
# O_DIRECT wants the buffer, the file offset and the length aligned to the device's logical
# block; 4 KiB covers 512-byte and 4 KiB devices.
_ALIGN = 4096
# One O_DIRECT write: a chunk is copied through an aligned buffer of this size, piece by piece
# (1 MiB pieces: 44 ms for 5 x 8 MB here, 4 MiB: 35 ms, 8 MiB: 30 ms). Buffers are kept
# between saves, one per thread writing at once: up to 32 MiB for a writer's eight syncers.
_PIECE = 4 << 20
_O_DIRECT = getattr(os, "O_DIRECT", 0)
# Folders where O_DIRECT was refused: their temp files are written through the page cache.
_direct_refused: set[str] = set()


_local = threading.local()


_pool = KeptPool(_POOL, "ledger-ckpt-sync")


class _Buffers:
    """Page-aligned buffers of ``_PIECE`` bytes for O_DIRECT writes, mapped on first need and
    kept: a buffer mapped anew for every chunk would pay its page faults every time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[mmap.mmap] = []

    def take(self) -> mmap.mmap:
        with self._lock:
            if self._free:
                return self._free.pop()
        return mmap.mmap(-1, _PIECE)

    def give(self, buf: mmap.mmap) -> None:
        with self._lock:
            self._free.append(buf)


_buffers = _Buffers()


def _after_fork() -> None:
    """A child has none of its parent's threads: it starts its own pool (``KeptPool``) and
    buffers, whose lock a parent thread may have held at the fork."""
    global _buffers
    _buffers = _Buffers()


os.register_at_fork(after_in_child=_after_fork)


def _write_buffered(fd: int, compressed: bool, payload: bytes | memoryview) -> None:
    view = memoryview(header_for(len(payload), compressed=compressed))
    while view:
        view = view[os.write(fd, view) :]
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _write_direct(fd: int, compressed: bool, payload: bytes | memoryview) -> bool:
    """Write the header (``objects.header_for``) and ``payload`` to the empty file ``fd``:
    its whole blocks with O_DIRECT, piece by piece through an aligned buffer, the last
    partial block through the page cache, O_DIRECT turned off first (as
    ``store.batch._write_object``). Padding that block and cutting the file with
    ``ftruncate`` made the file system read the block back from the disk to zero its end
    (a synchronous read behind the chunk's own writes: 3 ms median, 10 ms at worst, for five
    4 MB chunks here, where the buffered tail took 0.03 ms). False, with the file empty and
    O_DIRECT off again, if the file system refuses O_DIRECT: write it buffered."""
    import numpy as np

    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | _O_DIRECT)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise
    src = np.frombuffer(payload, dtype=np.uint8)
    head = header_for(len(src), compressed=compressed)
    at = len(head)  # the payload's offset in the file (1, or a whole block)
    total = at + len(src)
    buf = _buffers.take()
    try:
        dst = np.frombuffer(buf, dtype=np.uint8)
        view = memoryview(buf)
        off = 0
        while off < total:
            n = min(_PIECE, total - off)
            if off == 0:
                dst[:at] = np.frombuffer(head, dtype=np.uint8)
                dst[at:n] = src[: n - at]
            else:
                dst[:n] = src[off - at : off - at + n]
            end = n - n % _ALIGN  # the whole blocks; the rest (the file's last) is buffered
            done = 0
            while done < end:
                try:
                    w = os.pwrite(fd, view[done:end], off + done)
                except OSError as e:
                    if e.errno != errno.EINVAL or off + done:
                        raise
                    # Refused at the first write (an alignment the device does not take).
                    fcntl.fcntl(fd, fcntl.F_SETFL, flags)
                    os.ftruncate(fd, 0)
                    return False
                if w <= 0 or w % _ALIGN:
                    raise OSError(errno.EIO, f"short O_DIRECT write: {w} of {end - done} bytes")
                done += w
            if end < n:  # the last piece's partial block: through the page cache
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
                tail = view[end:n]
                while tail:
                    w = os.pwrite(fd, tail, off + n - len(tail))
                    if w <= 0:
                        raise OSError(errno.EIO, f"write returned {w}")
                    tail = tail[w:]
            off += n
    finally:
        _buffers.give(buf)
    return True


def _compressor() -> zstandard.ZstdCompressor:
    # Making a compressor costs as much as compressing 40 kB: one per thread, reused.
    c: zstandard.ZstdCompressor | None = getattr(_local, "zstd", None)
    if c is None:
        c = _local.zstd = zstandard.ZstdCompressor(level=LEVEL)
    return c


def compression_pays(sample: memoryview, min_saving: float = MIN_SAVING) -> bool:
    """Whether zstd at ``LEVEL`` saves at least ``min_saving`` (a fraction; the store's
    ``MIN_SAVING`` unless given) on ``sample`` (a chunk's first bytes): the chunk is then
    compressed whole."""
    if len(sample) < MIN_COMPRESS:
        return False
    return len(_compressor().compress(sample)) <= len(sample) * (1 - min_saving)


def fsync_dirs(dirs: list[Path], meanwhile: Callable[[], None] | None = None) -> None:
    """fsync every folder of ``dirs`` on the pool's threads, all at once (they share the file
    system's journal commits: one after the other, each waited for a commit of its own),
    while this thread runs ``meanwhile``; the first error is raised once all are done."""
    wait = _start_fsyncs(dirs)
    try:
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        wait(check=False)
        raise
    wait()


def _start_fsyncs(dirs: list[Path]) -> Callable[..., None]:
    """Start an fsync of every folder of ``dirs`` on the pool's threads, all at once; what
    this returns waits until all are done, then raises the first error (``check=False``:
    raises nothing, for a caller that raises an error of its own)."""
    errors: list[BaseException] = []
    left = [len(dirs)]
    synced = threading.Condition()

    def sync(d: Path) -> None:
        try:
            fsync_dir(d)
        except BaseException as e:  # raised below, once every one is done
            errors.append(e)
        finally:
            with synced:
                left[0] -= 1
                synced.notify_all()

    for d in dirs:
        _pool().submit(lambda d=d: sync(d))  # type: ignore[misc]

    def wait(check: bool = True) -> None:
        with synced:
            synced.wait_for(lambda: left[0] == 0)
        if errors and check:
            raise errors[0]

    return wait


class Written:
    """Whether the object ``ChunkWriter.put`` queued was stored by this writer (``new``), known
    once ``finish`` returned: another writer may have named the same object first."""

    __slots__ = ("new",)

    def __init__(self, new: bool) -> None:
        self.new = new


# A temp file on its way to its name: id, descriptor, temp name (None: unnamed), the result
# to set, what to call once it is named, and what is still to be written into it
# (compressed?, payload, around the page cache?), if anything.
_Job = tuple[
    str,
    int,
    Path | None,
    Written,
    Callable[[str, bool], None] | None,
    tuple[bool, bytes | memoryview, bool] | None,
]


class ChunkWriter:
    """``put`` from any number of threads, then ``finish`` (or ``abort``) once, always."""

    def __init__(self, objects: ObjectStore, named: Callable[[], None] = lambda: None) -> None:
        """``named`` is called after each object this writer gave a name (a test hook)."""
        self.objects = objects
        objects.writing()
        self._named = named
        self._jobs: collections.deque[_Job] = collections.deque()
        self._slots = threading.BoundedSemaphore(_PENDING)
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)  # notified when ``_running`` drops to 0
        self._running = 0  # syncer tasks on the pool; each drains ``_jobs``, then ends
        self._dirs: set[Path] = set()  # folders whose entries changed: fsynced by ``finish``
        self._errors: list[BaseException] = []
        self._aborted = False

    def put(
        self,
        data: memoryview,
        compress: bool,
        then: Callable[[str, bool], None] | None = None,
        direct: bool = False,
    ) -> tuple[str, Written | None]:
        """Hash ``data`` and, unless its object is stored, queue it for a syncer to write to a
        temp file, fsync and name (``data`` must stay as it is until ``finish``; compressed,
        it is written here): its ``Written`` is settled once ``finish`` returned, and
        ``then(oid, new)`` runs on a syncer thread once it is named. None: found stored.
        ``direct``: write it around the page cache (O_DIRECT) if it is large enough and the
        file system takes it. An error writing it is raised by ``settle``/``finish``."""
        oid = hash_bytes(data)
        if self.objects.touch(oid):
            return oid, None
        payload = _compressor().compress(data) if compress else data
        self._slots.acquire()
        try:
            fd, name = self._temp()
        except BaseException:
            self._slots.release()
            raise
        # A raw payload is a view of the caller's memory, which stays as it is until
        # ``finish``: queued, it is written by a syncer while this thread goes on comparing
        # and hashing. A compressed one is bytes of its own: written here, so that at most
        # one per calling thread is held, not one per queued job.
        todo: tuple[bool, bytes | memoryview, bool] | None = None
        if not compress:
            todo = (False, payload, direct)
        else:
            try:
                self._write(fd, True, payload, direct)
            except BaseException:
                self._discard(fd, name)
                raise
        written = Written(False)
        with self._lock:
            self._jobs.append((oid, fd, name, written, then, todo))
            start = self._running < _SYNCERS
            if start:
                self._running += 1
        if start:
            _pool().submit(self._sync_queued)
        return oid, written

    def settle(self) -> None:
        """Wait until every queued object is durable and has its name (each ``Written`` is
        settled); the first error of a syncer is raised. The names are made durable by
        ``finish``."""
        self._stop()
        if self._errors:
            raise self._errors[0]

    def finish(self, meanwhile: Callable[[], Callable[[], None] | None] | None = None) -> None:
        """``settle``, then make every directory that changed durable; the first error is
        raised. ``meanwhile`` runs on this thread first: work that needs the objects' ids and
        whether each was new, but must not name anything that links to them yet (a manifest's
        content, written by ``StagedObject(sync=False)``). What it returns (that content's
        fsync) runs on this thread while the directories are fsynced: the content is in the
        file system's journal before any of those fsyncs starts, so the commit they start
        holds it too (written while they ran, it often took a commit of its own after theirs)."""
        self.settle()
        then = meanwhile() if meanwhile is not None else None
        fsync_dirs(sorted(self._dirs), then)

    def abort(self) -> None:
        """Drop whatever is not named yet (after an error): temp files are removed."""
        self._aborted = True
        self._stop()

    def _stop(self) -> None:
        """Wait until the syncer tasks have drained the queue and ended."""
        with self._done:
            self._done.wait_for(lambda: self._running == 0)

    def _write(self, fd: int, compressed: bool, payload: bytes | memoryview, direct: bool) -> None:
        """The header and the payload into the empty temp file ``fd``: O_DIRECT if asked
        for, the payload is large and the folder's file system takes it, else through the
        page cache."""
        folder = str(self.objects.tmp_dir)
        if direct and _O_DIRECT and len(payload) >= DIRECT_MIN and folder not in _direct_refused:
            if _write_direct(fd, compressed, payload):
                return
            _direct_refused.add(folder)
        _write_buffered(fd, compressed, payload)

    def _temp(self) -> tuple[int, Path | None]:
        fd = open_unnamed(self.objects.tmp_dir)
        if fd is not None:
            return fd, None
        fd, tmp = tempfile.mkstemp(dir=self.objects.tmp_dir, prefix="obj-")
        try:
            os.fchmod(fd, 0o444)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        return fd, Path(tmp)

    def _discard(self, fd: int, name: Path | None) -> None:
        """Close a temp file and remove its name, if it has one still; its slot comes back
        even when the removal fails (a file system gone read-only)."""
        try:
            with contextlib.suppress(OSError):
                os.close(fd)
            if name is not None:
                with contextlib.suppress(FileNotFoundError):
                    name.unlink()
        finally:
            self._slots.release()

    def _sync_queued(self) -> None:
        """A syncer task: fsync and name queued objects until none is left."""
        while True:
            with self._lock:
                if not self._jobs:
                    self._running -= 1
                    if self._running == 0:
                        self._done.notify_all()
                    return
                oid, fd, name, written, then, todo = self._jobs.popleft()
            try:
                if self._aborted or self._errors:
                    continue
                if todo is not None:
                    self._write(fd, *todo)
                written.new = self._name(oid, fd, name)
                if written.new:
                    self._named()
                if then is not None:
                    then(oid, written.new)
            except BaseException as e:
                self._errors.append(e)
            finally:
                # An error here must reach ``finish`` too: raised on a pool thread, it would
                # end the thread with ``_running`` never dropping to 0, and the save would hang.
                try:
                    self._discard(fd, name)
                except BaseException as e:
                    self._errors.append(e)

    def _name(self, oid: str, fd: int, name: Path | None) -> bool:
        """fsync the temp file, then give it its name; False if the object was there."""
        os.fsync(fd)
        final = self.objects.path_of(oid)
        self._make_dirs(final.parent)
        if name is None:
            if not link_unnamed(fd, final):  # stored meanwhile (a duplicate, another writer)
                self.objects.touch(oid)  # reused like any object found stored
                return False
        elif self.objects.touch(oid):
            return False
        elif not link_named(name, final):  # named by another writer since the check
            self.objects.touch(oid)
            return False
        with self._lock:
            self._dirs.add(final.parent)
        return True

    def _make_dirs(self, fan: Path) -> None:
        """Create ``fan`` and any missing folder above it; the folders holding a new one
        are fsynced by ``finish`` (a new folder's own entry must be durable too)."""
        if fan.is_dir():
            return
        with self._lock:
            missing: list[Path] = []
            d = fan
            while not d.is_dir() and d != self.objects.root.parent:
                missing.append(d)
                d = d.parent
            for d in reversed(missing):
                with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
                    d.mkdir()
                self._dirs.add(d.parent)


class StagedObject:
    """One object (a manifest) whose content is made durable now, in a temp file without a
    name where the platform allows, and whose name is given later by ``name``.

    A manifest's name must not appear before the objects it links to are durable under
    theirs (docs/format.md, "Write ordering"); its content may be. A save writes its shard
    manifest's content just before the directories of its chunks are fsynced, fsyncs it while
    they are (``ChunkWriter.finish``), and names it after: the manifest's own fsync is off the
    save's critical path, and in the same journal commit as theirs. Stored as
    ``put_bytes`` would store it: the id is the hash of the content, compressed when that
    makes it 10% smaller. ``name`` or ``discard`` must be called once.
    """

    def __init__(self, objects: ObjectStore, data: bytes, *, sync: bool = True) -> None:
        """``sync=False``: the content is written, not fsynced; ``sync`` must be called before
        ``name`` (rank 0 writes the record first, then fsyncs it beside the shard manifests'
        folders, so that one journal commit can make all of them durable)."""
        self.objects = objects
        objects.writing()
        self.oid = hash_bytes(data)
        self._fd: int | None = None
        self._tmp: Path | None = None
        self._synced = True
        # Whether ``name`` made the object's fan folder (and so changed the folder above it).
        self.made_folder = False
        if objects.touch(self.oid):  # stored already: nothing to write
            return
        pays = compression_pays(memoryview(data)[: 64 << 10])
        payload = _compressor().compress(data) if pays else data
        fd = open_unnamed(objects.tmp_dir)
        if fd is None:
            fd, name = tempfile.mkstemp(dir=objects.tmp_dir, prefix="obj-")
            self._tmp = Path(name)
        self._fd = fd
        try:
            if self._tmp is not None:
                os.fchmod(fd, 0o444)
            _write_buffered(fd, pays, payload)
            self._synced = False
            if sync:
                self.sync()
        except BaseException:
            self.discard()
            raise

    def sync(self) -> None:
        """Make the content durable (fsync); nothing to do once it is, or if it was stored."""
        if self._fd is not None and not self._synced:
            os.fsync(self._fd)
            self._synced = True

    def name(self, durable: bool = True) -> bool:
        """Give the object its name and make the name durable; False if it was stored
        already (found then, or named by another writer meanwhile: touched, as reused).
        ``durable=False`` leaves the fsync of its folder (and of the one above, where the
        folder is new: ``made_folder``) to the caller: a shard manifest of a rank in a group,
        whose folder rank 0 fsyncs."""
        folders = self._link()
        if folders is None:
            return False
        if durable and len(folders) == 1:
            fsync_dir(folders[0])
        elif durable:  # a new fan folder: its own and the one above, at once
            fsync_dirs(folders)
        return True

    def name_aside(self) -> Callable[[], None]:
        """``name``, whose folder fsyncs (``made_folder``: and the one above) run on the
        pool's threads from now on; what this returns waits for them and raises the first
        error. For a checkpoint record: ``Store.set_refs`` takes its lock and reads what the
        log append needs meanwhile, and waits for the record's name to be durable only
        before the append itself (``before_append``)."""
        folders = self._link()
        return (lambda: None) if folders is None else _start_fsyncs(folders)

    def _link(self) -> list[Path] | None:
        """Give the object its name: the folders whose fsync makes it durable (its fan
        folder, and the one above where the fan is new), or None if it was stored already."""
        if self._fd is None:
            return None
        if not self._synced:
            self.discard()
            raise RuntimeError("a staged object is named once its content is durable (sync)")
        try:
            final = self.objects.path_of(self.oid)
            fan = final.parent
            new_dirs = [d for d in (fan.parent, fan) if not d.is_dir()]
            for d in new_dirs:
                with contextlib.suppress(FileExistsError):
                    d.mkdir()
            self.made_folder = bool(new_dirs)
            if self._tmp is None:
                new = link_unnamed(self._fd, final)
            else:
                new = not self.objects.touch(self.oid) and link_named(self._tmp, final)
            if not new:
                self.objects.touch(self.oid)
                return None
            return [fan, *(d.parent for d in new_dirs)]
        finally:
            self.discard()

    def discard(self) -> None:
        """Close and remove the temp file (after ``name``, or instead of it)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                self._tmp.unlink()
            self._tmp = None
