"""Objects fetched by their ids (a pull): each hashed once as it is written, all made durable
together, then named.

``ObjectStore.put_stream(expect=...)`` makes each object durable on its own (fsync the temp
file, rename it, fsync its folder), and takes its bytes through a stream and a file object's
buffer. A pull of a few large objects spent its time there, beside work a plain copy does not
do. Here, as in ``store.batch``:

1. **stage** (``Incoming.writer``): the caller reads the remote's bytes straight into the
   writer's buffer (this thread's, page-aligned, reused); each full piece is hashed, then
   written to an unnamed temp file (``durable.open_unnamed``) from that buffer, with O_DIRECT
   where the file system takes it (``durable.direct_io``); ``finish`` compares the hash with
   the id the object was fetched by: any other id raises CorruptObjectError and the temp file
   is dropped, never named. Every byte is hashed once and copied once (into the buffer);
2. **durable** (``Incoming.commit``): one barrier for every object staged since the last
   (``durable.sync_files``: ``syncfs`` where that is enough, else ``fdatasync`` of each);
3. **name**: each temp file gets its object's name (``linkat``); one already there is
   touched instead (``ObjectStore.touch``), as every writer does;
4. **folders**: the new names made durable (``durable.sync_dirs``).

The order is the store's (docs/format.md, "Write ordering"): a name appears only after its
content is durable, and the caller makes no ref to these objects before ``commit`` returns. A
pull killed at any point leaves no object that is not whole: its unnamed temp files vanish with
it. A staged object has no name yet, so the caller reads a record's links from the content
``finish`` hands back (``walk.as_record``), not from the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import zstandard

from .._hashing import ALGO_PREFIX, new_hasher
from ..errors import CorruptObjectError
from .batch import _batch_size, _make_dirs, _pwrite_all
from .durable import (
    current_umask,
    direct_io,
    link_named,
    link_unnamed,
    open_unnamed,
    refuse_direct,
    sync_dirs,
    sync_files,
)
from .objects import (
    ALIGN_MIN,
    PAGE,
    SAMPLE,
    ZSTD_LEVEL,
    ObjectStore,
    compression_pays,
    header_for,
)
from .walk import MAX_RECORD

__all__ = ["PIECE", "Fetched", "Incoming", "ObjectWriter"]

# Bytes hashed and written at once: a whole number of 4 KiB blocks (O_DIRECT's unit).
PIECE = 4 << 20
_ALIGN = 4096
_O_DIRECT = getattr(os, "O_DIRECT", 0)
# When the caller should make what is staged durable and named (``Incoming.due``): at this
# many objects (each holds an open descriptor until it is named), or bytes, or once the
# oldest has waited this long, so that a pull killed midway leaves what it fetched before
# the last second or so named, for the next pull to skip. A barrier costs a ``syncfs`` or a
# few ``fdatasync``s, not one per object.
_BATCH = 4096
_BATCH_BYTES = 64 << 20
_BATCH_S = 0.5
# Threads that fdatasync when a ``syncfs`` cannot stand for them all (``durable.sync_files``).
_SYNCERS = 4

_local = threading.local()


def _buffer() -> mmap.mmap:
    """This thread's piece buffer, kept: page-aligned (mmap), as O_DIRECT needs, and touched
    once, not a fresh allocation (and its page faults) per object."""
    buf: mmap.mmap | None = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = mmap.mmap(-1, PIECE)
    return buf


@dataclass
class _Staged:
    oid: str
    fd: int
    name: Path | None  # None: an unnamed temp file
    size: int  # bytes in the temp file


@dataclass
class Fetched:
    """What ``ObjectWriter.finish`` staged: the content's size, and the content itself when
    it may be a record (it starts with ``{`` and is under ``walk.MAX_RECORD`` bytes), for
    the caller to read its links. ``later``: it starts with ``{`` but is larger: its links
    are read from the store once it is named (``links_of``, as for a stored object)."""

    size: int
    content: bytes | None
    later: bool


class ObjectWriter:
    """One object being fetched into ``Incoming``: ``room()`` is where the next bytes go,
    ``wrote(n)`` says how many went there, ``finish()`` checks the id and stages it. Used by
    one thread from start to end (the buffer is the thread's)."""

    def __init__(self, incoming: Incoming, oid: str) -> None:
        self._in, self.oid = incoming, oid
        self._view = memoryview(_buffer())
        # The next free byte. The first piece's content starts at PAGE: the header goes before
        # it (``objects.header_for``: a whole page for raw content of ALIGN_MIN or more, the
        # codec byte alone, at PAGE - 1, otherwise), so an aligned file is written from the
        # buffer's start, whole blocks, as O_DIRECT needs.
        self._at = PAGE
        self._first = True
        # One thread: it is fed a piece at a time, far faster than a remote sends one, and a
        # pull's workers hash their objects side by side already; BLAKE3's own threads only
        # spent more CPU (0.20-0.27 s against 0.17-0.19 s a GiB here, 2026-12-06, load 2-7).
        self._hasher = new_hasher(threaded=False)
        self.size = 0  # content bytes taken
        self._written = 0  # bytes in the temp file
        self._fd: int | None = None
        self._name: Path | None = None
        self._direct = False
        self._zstd: Any = None  # a compressobj once zstd is chosen
        self._keep: bytearray | None = None  # a record's content, while it may be one
        self._later = False

    def room(self) -> memoryview:
        """The free part of this piece's buffer: never empty."""
        return self._view[self._at :]

    def wrote(self, n: int) -> None:
        """``n`` bytes were put at the start of ``room()``; a full piece is hashed and written."""
        self._at += n
        self.size += n
        if self._at == len(self._view):
            self._flush(final=False)

    def finish(self) -> Fetched:
        """Write what is left and stage the object, if its content hashes to its id; else
        CorruptObjectError, and nothing is kept."""
        try:
            self._flush(final=True)
            got = ALGO_PREFIX + self._hasher.hexdigest()
            if got != self.oid:
                raise CorruptObjectError(
                    self.oid, f"content fetched as {self.oid} hashes to {got}; it was not stored"
                )
        except BaseException:
            self.abort()
            raise
        fd, self._fd = self._fd, None
        if fd is None:  # (``_flush`` opened it)
            raise RuntimeError(f"object {self.oid} was finished without a temp file")
        self._in._add(_Staged(self.oid, fd, self._name, self._written))
        keep = bytes(self._keep) if self._keep is not None else None
        return Fetched(self.size, keep, self._later)

    def abort(self) -> None:
        """Drop the temp file (unnamed: it vanishes)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._name is not None:
            with contextlib.suppress(FileNotFoundError):
                self._name.unlink()
            self._name = None

    # -- inside -------------------------------------------------------------------------------
    def _open(self, content: memoryview, final: bool) -> int:
        """Choose the codec from the first bytes (``objects.compression_pays``, the rule of
        every writer) and the header (``objects.header_for``: content that goes on past the
        first piece is ALIGN_MIN or more), put the header before the content in the buffer,
        open the temp file; returns where the file's bytes start in the buffer."""
        zstd = compression_pays(content[:SAMPLE])
        if zstd:
            self._zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        head = header_for(len(content) if final else ALIGN_MIN, compressed=zstd)
        start = PAGE - len(head)
        self._view[start:PAGE] = head
        self._in.objects.writing()
        tmp_dir = self._in.objects.tmp_dir
        # O_DIRECT for an aligned file only: a one-byte header puts the content off its blocks.
        want_direct = start == 0 and not zstd and direct_io(tmp_dir)
        fd = open_unnamed(tmp_dir, umask=self._in.umask, direct=want_direct)
        if fd is None:
            fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="obj-")
            self._name = Path(name)
            os.fchmod(fd, 0o444)
            want_direct = False
        self._fd = fd
        # open_unnamed may have left O_DIRECT out (refused here): ask the descriptor.
        self._direct = want_direct and bool(fcntl.fcntl(fd, fcntl.F_GETFL) & _O_DIRECT)
        return start

    def _flush(self, *, final: bool) -> None:
        content = self._view[PAGE if self._first else 0 : self._at]
        start = 0
        if self._first:
            start = self._open(content, final)
            if content[:1].tobytes() == b"{":
                self._keep = bytearray()
        self._hasher.update(content)
        if self._keep is not None:
            if len(self._keep) + len(content) < MAX_RECORD:  # walk.may_be_record's limit
                self._keep += content
            else:
                self._keep, self._later = None, True
        fd = self._fd
        if fd is None:  # (``_open`` opened it)
            raise RuntimeError(f"object {self.oid} has no temp file")
        if self._zstd is None:
            self._write(fd, self._view[start : self._at])
        else:
            out = self._zstd.compress(content)
            if final:
                out += self._zstd.flush()
            head = self._view[start:PAGE].tobytes() if self._first else b""
            _pwrite_all(fd, memoryview(head + out), self._written)
            self._written += len(head) + len(out)
        self._first = False
        self._at = 0

    def _write(self, fd: int, view: memoryview) -> None:
        """Write a raw piece at the end of the temp file: its whole blocks with O_DIRECT when
        the file is open that way (every piece but the last is whole blocks, written at a
        block boundary), the rest through the page cache with O_DIRECT turned off first. A
        refusal at the first write (the device's alignment) writes this folder through the
        page cache from then on."""
        at, done = self._written, 0
        if self._direct:
            whole = len(view) - len(view) % _ALIGN
            try:
                while done < whole:
                    n = os.pwrite(fd, view[done:whole], at + done)
                    if n <= 0:
                        raise OSError(errno.EIO, f"write returned {n}")
                    done += n
                    if done % _ALIGN:  # a short write off a block boundary: the rest buffered
                        break
            except OSError as e:
                if e.errno != errno.EINVAL or done or at:
                    raise
                refuse_direct(self._in.objects.tmp_dir)
            if done < len(view):
                fcntl.fcntl(fd, fcntl.F_SETFL, 0)  # none of its flags is ours but O_DIRECT
                self._direct = False
        _pwrite_all(fd, view[done:], at + done)
        self._written += len(view)


class Incoming:
    """The objects a pull fetched and staged, made durable and named by ``commit``; those not
    committed when the block ends (an error, an interrupt) are dropped."""

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self.umask = current_umask()  # once, not an fstat per temp file
        self.batch = _batch_size()
        self._lock = threading.Lock()
        self._staged: list[_Staged] = []
        self._bytes = 0  # in the staged temp files
        self._since = 0.0  # when the oldest of them was staged

    def __enter__(self) -> Incoming:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.discard()

    def writer(self, oid: str) -> ObjectWriter:
        return ObjectWriter(self, oid)

    def _add(self, staged: _Staged) -> None:
        with self._lock:
            if not self._staged:
                self._since = time.monotonic()
            self._staged.append(staged)
            self._bytes += staged.size

    def due(self) -> bool:
        """Whether to ``commit`` now: ``batch`` objects staged (a descriptor each), or
        ``_BATCH_BYTES`` bytes, or the oldest staged ``_BATCH_S`` seconds ago."""
        with self._lock:
            if not self._staged:
                return False
            return (
                len(self._staged) >= self.batch
                or self._bytes >= _BATCH_BYTES
                or time.monotonic() - self._since >= _BATCH_S
            )

    def commit(self) -> None:
        """Make every object staged so far durable, then give each its name, then make the
        names durable: once it returns, each is stored as any other object."""
        with self._lock:
            staged, self._staged, self._bytes = self._staged, [], 0
        if not staged:
            return
        root = self.objects.root
        try:
            fds = [s.fd for s in staged]
            sync_files(fds, self.objects.tmp_dir, _SYNCERS, sum(s.size for s in staged))
            dirs: set[Path] = set()
            # Latest first: a pull fetches what a record links to after the record, so its
            # links get their names before it does.
            for s in reversed(staged):
                final = self.objects.name_of(s.oid)
                fan = Path(os.path.dirname(final))
                if not fan.is_dir():
                    dirs |= _make_dirs(fan, root)
                dirs.add(fan)
                if s.name is None:
                    named = link_unnamed(s.fd, final)
                else:
                    named = not self.objects.touch(s.oid) and link_named(s.name, final)
                if not named:  # stored meanwhile (a duplicate, or another writer)
                    self.objects.touch(s.oid)
            with ThreadPoolExecutor(_SYNCERS, thread_name_prefix="ledger-sync") as pool:
                sync_dirs(dirs, root, pool)
        finally:
            for s in staged:
                _drop(s)

    def discard(self) -> None:
        """Drop every object staged and not committed."""
        with self._lock:
            staged, self._staged, self._bytes = self._staged, [], 0
        for s in staged:
            _drop(s)


def _drop(s: _Staged) -> None:
    with contextlib.suppress(OSError):
        os.close(s.fd)
    if s.name is not None:
        with contextlib.suppress(FileNotFoundError):
            s.name.unlink()
