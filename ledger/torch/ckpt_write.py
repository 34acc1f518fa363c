"""A save's new chunk objects, written without the hashing threads waiting for the disk.

``ObjectStore.put_bytes_new`` makes one object durable before it returns (write, fsync, rename,
fsync its directory). Save workers that called it sat in fsync, one chunk each, while other
chunks waited to be compared or hashed. Here a worker hashes a chunk, writes it to a temp file
(unnamed where the platform allows, ``store.durable``) and goes on with the next chunk; syncer
threads fsync each temp file and only then give it its object's name. ``finish`` waits for them
and fsyncs each directory that got a name once, not once per object.

The order that makes a crash harmless is ``put_bytes``'s (docs/format.md, "Write ordering"): a
name appears only after its content is durable, and the caller writes nothing that refers to
these objects before ``finish`` returns. A writer killed midway leaves complete objects, or
(unnamed) temp files that vanish with it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import zstandard

from .._hashing import hash_bytes
from ..store import ObjectStore
from ..store.atomic import fsync_dir
from ..store.durable import link_unnamed, open_unnamed
from ..store.objects import CODEC_RAW, CODEC_ZSTD, MIN_COMPRESS, MIN_SAVING

__all__ = ["LEVEL", "ChunkWriter", "Written", "compression_pays"]

# Tensor chunks are compressed at zstd level 1, not the store's 3: what float weights give up
# is the exponent bytes' entropy, which both levels code alike (randn + 4: 0.850 of the size
# at both), and level 1 takes about a quarter less CPU (9.3 vs 12.0 ms per 8 MB), on the
# save's critical path.
LEVEL = 1

# fsyncs in flight at once: concurrent fsyncs share journal commits and keep the disk busy.
_SYNCERS = 4
# Temp files written and not yet named: each holds a descriptor (and dirty pages) until then.
_PENDING = 16


_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    # Making a compressor costs as much as compressing 40 kB: one per thread, reused.
    c: zstandard.ZstdCompressor | None = getattr(_local, "zstd", None)
    if c is None:
        c = _local.zstd = zstandard.ZstdCompressor(level=LEVEL)
    return c


def compression_pays(sample: memoryview) -> bool:
    """Whether zstd at ``LEVEL`` saves at least the store's ``MIN_SAVING`` on ``sample``
    (a chunk's first bytes): the chunk is then compressed whole."""
    if len(sample) < MIN_COMPRESS:
        return False
    return len(_compressor().compress(sample)) <= len(sample) * (1 - MIN_SAVING)


class Written:
    """Whether the object ``ChunkWriter.put`` queued was stored by this writer (``new``), known
    once ``finish`` returned: another writer may have named the same object first."""

    __slots__ = ("new",)

    def __init__(self, new: bool) -> None:
        self.new = new


# A temp file on its way to its name: id, descriptor, temp name (None: unnamed), the result
# to set, and what to call once it is named.
_Job = tuple[str, int, Path | None, Written, Callable[[str, bool], None] | None]


class ChunkWriter:
    """``put`` from any number of threads, then ``finish`` (or ``abort``) once, always."""

    def __init__(self, objects: ObjectStore, named: Callable[[], None] = lambda: None) -> None:
        """``named`` is called after each object this writer gave a name (a test hook)."""
        self.objects = objects
        self._named = named
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(_PENDING)
        self._lock = threading.Lock()
        self._dirs: set[Path] = set()  # folders whose entries changed: fsynced by ``finish``
        self._errors: list[BaseException] = []
        self._aborted = False
        self._syncers: list[threading.Thread] = []

    def put(
        self,
        data: memoryview,
        compress: bool,
        then: Callable[[str, bool], None] | None = None,
    ) -> tuple[str, Written | None]:
        """Hash ``data`` and, unless its object is stored, write it to a temp file and queue
        it for fsync and naming: its ``Written`` is settled once ``finish`` returned, and
        ``then(oid, new)`` runs on a syncer thread once it is named. None: found stored."""
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
        try:
            os.write(fd, bytes([CODEC_ZSTD if compress else CODEC_RAW]))
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            self._discard(fd, name)
            raise
        written = Written(False)
        self._start_syncers()
        self._jobs.put((oid, fd, name, written, then))
        return oid, written

    def finish(self) -> None:
        """Wait until every queued object is durable under its name, and every directory that
        changed is too; the first error of a syncer is raised."""
        self._stop()
        if self._errors:
            raise self._errors[0]
        # One fsync per directory, all at once: they share the file system's journal commits.
        errors: list[BaseException] = []

        def sync(d: Path) -> None:
            try:
                fsync_dir(d)
            except BaseException as e:  # raised below, once every thread is joined
                errors.append(e)

        threads = [threading.Thread(target=sync, args=(d,)) for d in sorted(self._dirs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def abort(self) -> None:
        """Drop whatever is not named yet (after an error): temp files are removed."""
        self._aborted = True
        self._stop()

    def _stop(self) -> None:
        for _ in self._syncers:
            self._jobs.put(None)
        for t in self._syncers:
            t.join()
        self._syncers = []

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
        with contextlib.suppress(OSError):
            os.close(fd)
        if name is not None:
            with contextlib.suppress(FileNotFoundError):
                name.unlink()
        self._slots.release()

    def _start_syncers(self) -> None:
        with self._lock:
            if len(self._syncers) >= _SYNCERS or self._errors:
                return
            # Plain threads, not an executor: a background save finishing at interpreter exit
            # must still be able to start them.
            t = threading.Thread(target=self._sync_forever, name="ledger-ckpt-sync")
            self._syncers.append(t)
        t.start()

    def _sync_forever(self) -> None:
        while (job := self._jobs.get()) is not None:
            oid, fd, name, written, then = job
            try:
                if self._aborted or self._errors:
                    continue
                written.new = self._name(oid, fd, name)
                if written.new:
                    self._named()
                if then is not None:
                    then(oid, written.new)
            except BaseException as e:
                self._errors.append(e)
            finally:
                self._discard(fd, name)

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
        else:
            os.replace(name, final)
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
