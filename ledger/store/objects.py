"""The object database: an id maps to a file; add, get, has, delete. Nothing more.

An object file holds a header, its first byte the codec, then the payload: ``0x00`` raw,
``0x01`` one zstd frame, both from offset 1; ``0x02`` zeros up to ``PAGE``, then raw (content
of ``ALIGN_MIN`` bytes or more: a copy of it lines pages up). The id is the BLAKE3-256 of the
*uncompressed* content, so the codec never changes an id. The header is known here alone
(``header_for``, ``split_object``, ``raw_payload_offset``); verification (re-hashing) lives
here too because it needs the codec; indexing does not.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import blake3
import zstandard

from .._hashing import ALGO_PREFIX, CHUNK, OID_RE, hash_bytes, new_hasher
from ..errors import (
    AmbiguousIdError,
    CorruptObjectError,
    MissingObjectError,
    UnknownIdError,
    UsageError,
)
from .atomic import fsync_dir, temp_file
from .durable import link_named
from .safe_read import open_regular, read_small

__all__ = [
    "ALIGN_MIN",
    "CODEC_RAW",
    "CODEC_RAW_ALIGNED",
    "CODEC_ZSTD",
    "HEAD",
    "PAGE",
    "ObjectStore",
    "compression_pays",
    "head_pays",
    "header_for",
    "raw_payload_offset",
    "split_object",
]

CODEC_RAW = 0
CODEC_ZSTD = 1
# Raw content at ``PAGE``, the bytes between the codec byte and it zeros. Every byte of a
# payload at offset 1 sits one byte past a page boundary, and no copy of it (sendfile,
# copy_file_range, mmap) can hand whole pages over: sendfile of 1 GiB from the page cache
# cost 0.469 s of CPU from offset 1 against 0.308 s from offset 0.
CODEC_RAW_ALIGNED = 2
PAGE = 4096
# Raw content of at least this many bytes is written ``CODEC_RAW_ALIGNED``; smaller content
# keeps the one-byte header (space: each aligned object takes up to one block more). At most
# ``SAMPLE``: ``put_stream`` knows by then whether the content reaches it.
ALIGN_MIN = 64 << 10
_PADDING = bytes(PAGE - 1)
ZSTD_LEVEL = 3
# zstd is kept only when it saves at least this fraction; float weights save ~8% at best.
MIN_SAVING = 0.10
# Content smaller than this is stored raw: the header and frame overhead outweigh any gain.
MIN_COMPRESS = 64
# Streams decide the codec from a sample of their first bytes.
SAMPLE = 1 << 20
# Objects up to this size on disk are read whole with one read (``get_bytes``); larger ones
# as a stream, so a raw object is never in memory twice.
SMALL = 1 << 20

_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor: its context is made once, not once per object (a new
    one cost 7.5 us, a small record's whole decompression 4 us). One per thread, since a
    context decodes one frame at a time."""
    d: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if d is None:
        d = _local.zstd = zstandard.ZstdDecompressor()
    return d


# Content longer than this is judged on its first HEAD bytes before anything more: content
# whose start does not compress (media, random or encrypted bytes, float arrays) is stored
# raw without compressing the rest. Compressing 4 KiB costs about a tenth of what a 40 kB file
# costs (5,000 random files of 40 kB: 0.05 s against 0.30 s of CPU), which a batch of small
# inputs paid on every file.
HEAD = 4096


def head_pays(data: bytes | memoryview, compressor: zstandard.ZstdCompressor | None = None) -> bool:
    """False if ``data`` is longer than ``HEAD`` and zstd saves less than ``MIN_SAVING`` on
    its first ``HEAD`` bytes; else True (the rest of the rule decides)."""
    if len(data) <= HEAD:
        return True
    head = data[:HEAD]
    z = compressor or zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return len(z.compress(head)) <= len(head) * (1 - MIN_SAVING)


def compression_pays(sample: bytes | memoryview) -> bool:
    """Whether zstd saves at least ``MIN_SAVING`` on ``sample`` (judged on its head first):
    the writers' codec rule.

    Callers that write many large objects of one kind (tensor chunks) may judge a smaller
    sample themselves and pass ``compress=`` to ``put_bytes``; compressing costs ~1 ms/MiB.
    """
    if len(sample) < MIN_COMPRESS:
        return False
    z = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    if not head_pays(sample, z):
        return False
    return len(z.compress(sample)) <= len(sample) * (1 - MIN_SAVING)


def header_for(size: int, *, compressed: bool) -> bytes:
    """What an object file holds before its payload of ``size`` bytes (``compressed``: a zstd
    frame; else the content): the one rule every writer follows."""
    if compressed:
        return bytes([CODEC_ZSTD])
    if size >= ALIGN_MIN:
        return bytes([CODEC_RAW_ALIGNED]) + _PADDING
    return bytes([CODEC_RAW])


def _corrupt(oid: str, what: str) -> CorruptObjectError:
    return CorruptObjectError(
        oid,
        f"{f'object {oid}' if oid else 'an object file'} {what}",
        hint="run `ledger verify`; restore the object from a remote or another copy",
    )


def _offset(head: bytes | memoryview, oid: str) -> int:
    """Where the payload begins in an object file whose first bytes (at least ``PAGE`` of
    them, or the whole file) are ``head``; CorruptObjectError for an unknown codec byte, an
    aligned header cut short, or padding that is not zeros (bytes no reader would show: a
    place to hide data), so every reader refuses what ``ledger verify`` reports."""
    codec = bytes(head[:1])
    if codec in (b"\x00", b"\x01"):
        return 1
    if codec == b"\x02":
        if len(head) < PAGE:
            raise _corrupt(oid, f"holds {len(head)} bytes, less than its {PAGE}-byte header")
        if head[1:PAGE] != _PADDING:
            raise _corrupt(oid, "has non-zero bytes in its header's padding")
        return PAGE
    raise _corrupt(oid, f"has an unknown codec byte {codec!r}")


def split_object(data: bytes, oid: str = "") -> tuple[int, memoryview]:
    """The codec and the payload of a whole object file's bytes ``data`` (the header
    checked as every reader checks it)."""
    at = _offset(data, oid)
    return data[0], memoryview(data)[at:]


def raw_payload_offset(fd: int, *, oid: str = "") -> int | None:
    """Where the raw content starts in the open object file ``fd`` (its bytes from there to
    the end are the content, page-aligned for ``CODEC_RAW_ALIGNED``); None if it is
    compressed. ``oid`` names the object in the error (header checked as ``split_object``)."""
    head = os.pread(fd, PAGE, 0)
    at = _offset(head, oid)
    return None if head[0] == CODEC_ZSTD else at


def _real_fd(stream: object) -> int | None:
    """The descriptor of a regular file behind ``stream`` (not a pipe, socket or wrapper)."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
    import stat

    return fd if isinstance(fd, int) and stat.S_ISREG(os.fstat(fd).st_mode) else None


# Raw streams are copied in pieces of this size: BLAKE3 hashes one piece (in its own threads,
# without the GIL) while the previous write and the next read run; three pieces in memory.
PIPE_CHUNK = 4 << 20


def _hash_and_write(
    stream: BinaryIO, first: bytes, hasher: blake3.blake3, out: BinaryIO, copy: bool = True
) -> None:
    """Read ``stream`` once, hashing each piece while writing it: the hash and the copy overlap
    instead of adding up. Every byte hashed is a byte written, so the id names what is stored.

    Pieces are read into two buffers used in turn (one hashed and written while the next is
    read into the other): a fresh 4 MiB ``bytes`` per piece cost page faults on every piece."""
    from concurrent.futures import ThreadPoolExecutor

    if (
        copy
        and isinstance(stream, io.BufferedReader | io.FileIO)
        and _copy_then_hash(stream, first, hasher, out)
    ):
        return
    if not isinstance(stream, io.BufferedReader | io.FileIO | io.BytesIO):
        # Other streams may lack a working ``readinto`` (a RawIOBase with only ``read``).
        _hash_and_write_copies(stream, first, hasher, out)
        return
    readinto = stream.readinto
    out.flush()
    fd = out.fileno()
    views = [memoryview(bytearray(PIPE_CHUNK)), memoryview(bytearray(PIPE_CHUNK))]

    def fill(view: memoryview, n: int) -> int:
        while n < len(view) and (got := readinto(view[n:])):
            n += got
        return n

    views[0][: len(first)] = first
    n = fill(views[0], len(first))
    k = 0
    with ThreadPoolExecutor(1, thread_name_prefix="ledger-hash") as pool:
        while n:
            piece = views[k][:n]
            hashed = pool.submit(hasher.update, piece)
            while piece:
                piece = piece[os.write(fd, piece) :]
            k ^= 1
            # The other buffer's hash finished before this piece's began: free to refill.
            n = fill(views[k], 0) if n == PIPE_CHUNK else 0
            hashed.result()


# Errors of a first copy_file_range that mean "not here" (an old kernel, two file systems, a
# file system without it): the bytes are then read and written as before.
_NO_COPY_RANGE = {errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


def _copy_then_hash(stream: BinaryIO, first: bytes, hasher: blake3.blake3, out: BinaryIO) -> bool:
    """``_hash_and_write`` for a regular file with at least ``PIPE_CHUNK`` bytes left: the
    kernel copies it into ``out`` (``copy_file_range``: no copy through Python's buffers, the
    way ``shutil.copyfile`` copies), and each piece is hashed as read back from ``out`` while
    the next is copied. What is hashed is what the temp file holds, so the id names the
    stored bytes even if the source changes meanwhile. A copy that stops where a read does
    not (a file that grew, or one whose file system reports no end) is finished by reading.
    False, with nothing written, where the kernel or the file systems do not copy this way.

    1 GB on this project's VM: 0.82 s, as fast as ``shutil.copyfile`` (0.84-0.99 s) and
    ahead of reading and writing it (0.99-1.33 s)."""
    from concurrent.futures import Future, ThreadPoolExecutor

    src = _real_fd(stream)
    copy_range = getattr(os, "copy_file_range", None)
    if src is None or copy_range is None:
        return False
    at = stream.tell()
    if os.fstat(src).st_size - at < PIPE_CHUNK:
        return False
    import fcntl  # (copy_file_range exists only where fcntl does)

    out.flush()
    fd = out.fileno()
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDWR:  # it is read back
        return False
    base = os.lseek(fd, 0, os.SEEK_CUR)  # after the codec byte; ``first`` goes here
    src_off, dst_off = at, base + len(first)
    try:
        n = copy_range(src, fd, PIPE_CHUNK, src_off, dst_off)
    except OSError as e:
        if e.errno in _NO_COPY_RANGE:
            return False
        raise
    view = memoryview(first)
    while view:  # into the gap left before the copied bytes
        view = view[os.pwrite(fd, view, base + len(first) - len(view)) :]
    hasher.update(first)
    buf = memoryview(bytearray(PIPE_CHUNK))

    def hash_back(off: int, left: int) -> None:
        while left:
            got = os.preadv(fd, [buf[: min(left, PIPE_CHUNK)]], off)
            if got <= 0:
                raise OSError(errno.EIO, "the temp file read back short")
            hasher.update(buf[:got])
            off, left = off + got, left - got

    pending: Future[None] | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="ledger-hash") as pool:
        while n:
            if pending is not None:
                pending.result()
            pending = pool.submit(hash_back, dst_off, n)
            src_off, dst_off = src_off + n, dst_off + n
            n = copy_range(src, fd, PIPE_CHUNK, src_off, dst_off)
        if pending is not None:
            pending.result()
    stream.seek(src_off)  # where a read would have left it
    os.lseek(fd, dst_off, os.SEEK_SET)
    if os.pread(src, 1, src_off):  # the copy stopped before the end a read finds
        _hash_and_write(stream, b"", hasher, out, copy=False)
    return True


def _hash_and_write_copies(
    stream: BinaryIO, first: bytes, hasher: blake3.blake3, out: BinaryIO
) -> None:
    """``_hash_and_write`` for any other stream: a new piece per read."""
    from concurrent.futures import ThreadPoolExecutor

    chunk = first + stream.read(PIPE_CHUNK - len(first)) if len(first) < PIPE_CHUNK else first
    with ThreadPoolExecutor(1, thread_name_prefix="ledger-hash") as pool:
        while chunk:
            hashed = pool.submit(hasher.update, chunk)
            out.write(chunk)
            following = stream.read(PIPE_CHUNK)
            hashed.result()
            chunk = following


def _sendfile_copy(src: int, dest: int, offset: int) -> int | None:
    """Copy ``src`` from ``offset`` to its end to ``dest``'s position, kernel to kernel; the
    byte count, or None, with nothing written, where ``sendfile`` cannot write to ``dest`` (an
    ``O_APPEND`` descriptor: ``ledger cat OID >> file``); then the bytes are read and written."""
    n = 0
    while True:
        try:
            sent = os.sendfile(dest, src, offset, CHUNK * 8)
        except OSError as e:
            if n == 0 and e.errno in _NO_COPY_RANGE:
                return None
            raise
        if not sent:
            return n
        offset += sent
        n += sent


class ObjectStore:
    """Content-addressed, write-once objects under ``root`` (``.ledger/objects``)."""

    def __init__(
        self, root: Path, tmp_dir: Path, before_write: Callable[[], None] | None = None
    ) -> None:
        self.root = root
        self.tmp_dir = tmp_dir
        # Called before this store writes its first object (``writing``): Store raises the
        # ledger's format version there, so that a ledger too old to read the 0x02 layout
        # refuses the store by its version instead of calling its objects corrupt.
        self._before_write = before_write
        # The fan directories' parent as a str: ``name_of`` builds names from it.
        self._fans = os.path.join(root, "b3")

    def writing(self) -> None:
        """Every writer calls this before it writes an object file (the first call runs the
        ``before_write`` hook; later ones cost an attribute read)."""
        hook = self._before_write
        if hook is not None:
            hook()
            self._before_write = None

    # -- addressing ---------------------------------------------------------------------------
    def path_of(self, oid: str) -> Path:
        return Path(self.name_of(oid))

    def name_of(self, oid: str) -> str:
        """``path_of`` as a str: for loops over thousands of objects, where building a
        ``Path`` cost more than the syscall it named (three joins, each parsing parts)."""
        if not OID_RE.match(oid):
            raise UsageError(
                f"{oid!r} is not an object id", hint="ids look like b3:<64 hex digits>"
            )
        n = len(ALGO_PREFIX)
        return f"{self._fans}/{oid[n : n + 2]}/{oid[n + 2 :]}"

    def has(self, oid: str) -> bool:
        return self.path_of(oid).is_file()

    def touch(self, oid: str) -> bool:
        """``has`` for writers: True if the object is there, and its mtime is set to now.

        A writer that reuses an object instead of writing it (deduplication) must call this,
        not ``has``: gc's grace period and its in-flight cutoff look at the mtime, so a reused
        object counts as just written. False (the object is absent, or gc took it away an
        instant ago): the writer must write it again.
        """
        try:
            os.utime(self.name_of(oid))
        except FileNotFoundError:
            return False
        except PermissionError:
            # A read-only ledger (another user's objects): reading is all it can do anyway.
            return self.has(oid)
        return True

    def touch_all(self, oids: Iterable[str]) -> set[str]:
        """``touch`` for many ids: the ones stored (each touched). The fan folders are listed
        once, so an id whose fan folder is missing costs no syscall: in a new store, none
        does. An object stored after the listing counts as missing: its writer finds it then
        (``put_files`` touches what it finds at naming time)."""
        try:
            fans = set(os.listdir(self._fans))
        except FileNotFoundError:
            fans = set()
        n = len(ALGO_PREFIX)
        stored = set()
        for oid in oids:
            if OID_RE.match(oid) and oid[n : n + 2] not in fans:
                continue
            if self.touch(oid):  # (an invalid id: its UsageError)
                stored.add(oid)
        return stored

    def resolve(self, text: str) -> str:
        """A full id from an id or a unique prefix of at least 4 hex digits (``b3:`` optional)."""
        digest = text[len(ALGO_PREFIX) :] if text.startswith(ALGO_PREFIX) else text
        if not re.fullmatch(r"[0-9a-f]{4,64}", digest):
            raise UsageError(
                f"{text!r} is not an object id or id prefix",
                hint="give at least 4 lowercase hex digits, e.g. b3:1a2b",
            )
        if len(digest) == 64:
            oid = ALGO_PREFIX + digest
            if not self.has(oid):
                raise UnknownIdError(f"no object {oid} in this ledger")
            return oid
        fan = self.root / "b3" / digest[:2]
        rest = digest[2:]
        matches = sorted(
            ALGO_PREFIX + digest[:2] + p.name
            for p in (fan.iterdir() if fan.is_dir() else [])
            if p.name.startswith(rest)
        )
        if not matches:
            raise UnknownIdError(f"no object id starts with {text!r}")
        if len(matches) > 1:
            raise AmbiguousIdError(
                f"{text!r} matches {len(matches)} objects",
                candidates=matches,
                hint="give more digits: " + ", ".join(m[:16] for m in matches[:5]),
            )
        return matches[0]

    def size_on_disk(self, oid: str) -> int:
        return self.path_of(oid).stat().st_size

    def payload_size(self, oid: str) -> int:
        """The bytes after the object file's header (its content if raw, its zstd frame if
        compressed): the size a layout does not change. FileNotFoundError if it is missing."""
        with open_regular(self.path_of(oid)) as f:
            return os.fstat(f.fileno()).st_size - _offset(os.pread(f.fileno(), PAGE, 0), oid)

    def content_size(self, oid: str) -> int:
        """The content's size without reading it: a raw object's payload, the size its zstd
        frame's header states, or counted by reading where the header lacks it.
        FileNotFoundError if it is missing."""
        with open_regular(self.path_of(oid)) as f:
            head = os.pread(f.fileno(), PAGE, 0)
            at = _offset(head, oid)
            if head[0] != CODEC_ZSTD:
                return os.fstat(f.fileno()).st_size - at
        with contextlib.suppress(zstandard.ZstdError):
            size = zstandard.frame_content_size(head[1:19])  # a frame header: 18 bytes at most
            if size >= 0:
                return int(size)
        n = 0
        with self.open(oid) as src:
            while chunk := src.read(CHUNK):
                n += len(chunk)
        return n

    def __iter__(self) -> Iterator[str]:
        base = self.root / "b3"
        if not base.is_dir():
            return
        for fan in sorted(base.iterdir()):
            if len(fan.name) != 2 or not fan.is_dir():
                continue
            for entry in sorted(fan.iterdir()):
                oid = f"{ALGO_PREFIX}{fan.name}{entry.name}"
                if OID_RE.match(oid):
                    yield oid

    # -- writing -------------------------------------------------------------------------------
    def _publish(self, tmp: Path, oid: str) -> bool:
        """Move a complete, fsynced temp file to its final name. False if it was already there
        (then it is touched, like any reused object)."""
        final = self.path_of(oid)
        if self.touch(oid):
            return False
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(tmp, 0o444)
        # Of concurrent writers of one id, only the one that names it reports it new; the
        # caller's temp_file removes ``tmp`` either way.
        if not link_named(tmp, final):
            self.touch(oid)
            return False
        fsync_dir(final.parent)
        return True

    def put_bytes(self, data: bytes | memoryview, *, compress: bool | None = None) -> str:
        """Store ``data``; returns its id. ``compress`` None decides by what zstd saves."""
        return self.put_bytes_new(data, compress=compress)[0]

    def put_bytes_new(
        self, data: bytes | memoryview, *, compress: bool | None = None
    ) -> tuple[str, bool]:
        """Like ``put_bytes``, and also whether this call stored it (False: it was present).

        Callers that account for what a write cost (checkpoints report new bytes) need the
        second value; a ``memoryview`` is written without copying when it is not compressed.
        """
        oid = hash_bytes(data)
        if self.touch(oid):
            return oid, False
        if compress is None:
            # Small content is compressed once and judged by the result; larger content is
            # judged by a sample first, so incompressible weights are never compressed whole.
            use_zstd = len(data) >= MIN_COMPRESS and (
                head_pays(data) if len(data) <= SAMPLE else compression_pays(data[:SAMPLE])
            )
        else:
            use_zstd = compress
        payload = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data) if use_zstd else data
        if use_zstd and compress is None and len(payload) > len(data) * (1 - MIN_SAVING):
            use_zstd, payload = False, data
        self.writing()
        with temp_file(self.tmp_dir, prefix="obj-") as (f, tmp):
            f.write(header_for(len(payload), compressed=use_zstd))
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
            f.close()
            new = self._publish(tmp, oid)
        return oid, new

    def put_stream(
        self, stream: BinaryIO, *, compress: bool | None = None, expect: str | None = None
    ) -> str:
        """Store a stream of any length in constant memory; returns its id. With ``expect``
        (content fetched by its id), content that hashes to anything else is never published:
        CorruptObjectError, and nothing is left behind."""
        first = stream.read(SAMPLE)
        # Up to SAMPLE bytes or the end (a pipe reads short): the codec is judged on exactly
        # the first SAMPLE bytes, and content shorter than that is all in hand, its size known.
        while 0 < len(first) < SAMPLE and (more := stream.read(SAMPLE - len(first))):
            first += more
        if len(first) < SAMPLE:
            # All of it is in hand: an object already stored (an empty log, a log a replay
            # printed again) is not written and fsynced once more only to be dropped.
            oid = hash_bytes(first)
            if expect is not None and oid != expect:
                raise CorruptObjectError(
                    expect, f"content fetched as {expect} hashes to {oid}; it was not stored"
                )
            if self.touch(oid):
                return oid
        use_zstd = compression_pays(first) if compress is None else compress
        hasher = new_hasher()
        self.writing()
        with temp_file(self.tmp_dir, prefix="obj-") as (f, tmp):
            # ``first`` is all the content, or SAMPLE >= ALIGN_MIN bytes of more.
            f.write(header_for(len(first), compressed=use_zstd))
            sink: BinaryIO = f
            writer = None
            if use_zstd:
                writer = zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(f, closefd=False)
                sink = writer  # type: ignore[assignment]
            if writer is None:
                _hash_and_write(stream, first, hasher, f)
            else:
                chunk = first
                while chunk:
                    hasher.update(chunk)
                    sink.write(chunk)
                    chunk = stream.read(CHUNK)
            if writer is not None:
                writer.flush(zstandard.FLUSH_FRAME)
            f.flush()
            os.fsync(f.fileno())
            f.close()
            oid = ALGO_PREFIX + hasher.hexdigest()
            if expect is not None and oid != expect:
                raise CorruptObjectError(
                    expect, f"content fetched as {expect} hashes to {oid}; it was not stored"
                )
            self._publish(tmp, oid)
        return oid

    def put_file(self, path: str | Path, *, compress: bool | None = None) -> str:
        with open(path, "rb") as f:
            return self.put_stream(f, compress=compress)

    # -- reading -------------------------------------------------------------------------------
    def open(self, oid: str) -> BinaryIO:
        """A stream of the object's content (decompressed). Not verified: see ``verify``."""
        path = self.path_of(oid)
        try:
            f = open_regular(path)  # a FIFO or a link there is refused, never waited on
        except (FileNotFoundError, NotADirectoryError):
            raise MissingObjectError(oid) from None
        try:
            at = raw_payload_offset(f.fileno(), oid=oid)
        except BaseException:
            f.close()
            raise
        if at is None:
            f.seek(1)
            return zstandard.ZstdDecompressor().stream_reader(f, closefd=True)  # type: ignore[no-any-return]
        f.seek(at)
        return f

    def get_bytes(self, oid: str, *, verify: bool = True) -> bytes:
        try:
            data = self._read_small(oid)
            if data is None:  # a large object: read in pieces, as a stream
                with self.open(oid) as f:
                    data = f.read()
        except zstandard.ZstdError as e:
            raise CorruptObjectError(oid, f"object {oid} does not decompress: {e}") from None
        if verify and hash_bytes(data) != oid:
            raise CorruptObjectError(
                oid,
                f"object {oid} is corrupt: its content does not hash to its id",
                hint="run `ledger verify` to list every damaged object",
            )
        return data

    def _read_small(self, oid: str) -> bytes | None:
        """The content of an object of at most ``SMALL`` bytes on disk, decoded as ``open``
        decodes it (unverified); None for a larger one. One ``os.read`` and this thread's
        decompression context, not a file object and a new context per object: ``reindex``
        reads every record, and that set-up was most of the 50 us each read cost."""
        try:
            data = read_small(self.name_of(oid), SMALL)
        except (FileNotFoundError, NotADirectoryError):
            raise MissingObjectError(oid) from None
        if data is None:
            return None
        codec, payload = split_object(data, oid)
        if codec != CODEC_ZSTD:
            return bytes(payload)
        # Every frame to the end, and an error for bytes after the last: what reading
        # ``open``'s stream to its end gives (tests/test_objects_small_reads.py).
        out: bytes = _decompressor().decompressobj(read_across_frames=True).decompress(payload)
        return out

    def verify(self, oid: str) -> None:
        """Re-hash one object in constant memory, its header checked as every reader checks
        it (``split_object``); raise CorruptObjectError or MissingObjectError."""
        hasher = new_hasher()
        try:
            with self.open(oid) as f:
                while chunk := f.read(CHUNK):
                    hasher.update(chunk)
        except zstandard.ZstdError as e:
            raise CorruptObjectError(oid, f"object {oid} does not decompress: {e}") from None
        if ALGO_PREFIX + hasher.hexdigest() != oid:
            raise CorruptObjectError(oid, f"object {oid} does not hash to its id")

    def copy_to(self, oid: str, dest: BinaryIO) -> int:
        """Write the content to ``dest``; raw objects go kernel-to-kernel into real files."""
        n = 0
        with self.open(oid) as f:
            src_fd = _real_fd(f) if isinstance(f, io.BufferedReader) else None
            dest_fd = _real_fd(dest)
            if src_fd is not None and dest_fd is not None:
                dest.flush()
                # From the payload (``open`` left ``f`` there, for the reads below).
                copied = _sendfile_copy(src_fd, dest_fd, f.tell())
                if copied is not None:
                    return copied
            while chunk := f.read(CHUNK):
                dest.write(chunk)
                n += len(chunk)
        return n

    # -- deleting (gc only) ----------------------------------------------------------------------
    def delete(self, oid: str) -> None:
        path = self.path_of(oid)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        fsync_dir(path.parent)
