"""A stat cache: a file whose (inode, size, mtime, ctime) is unchanged is not read again.

This is what makes the second digest of an unchanged dataset cost a directory walk instead
of reading every byte (git's index and DVC's state do the same). Stored in
``.ledger/cache/stat-cache.v1``, a binary file (layout in docs/reference/data-digests.md):

    header   8s magic "LGSTATC\\0", u32 version, u32 count                (little endian)
    records  count x (u64 inode, u64 size, i64 mtime_ns, i64 ctime_ns,
                      u32 path offset, u32 path length, 32 bytes BLAKE3)
    paths    the absolute paths, os.fsencode'd, back to back
    trailer  32 bytes: BLAKE3 of everything before it

A file that is short, has another magic or version, or fails its trailer is ignored: the
cache is rebuilt, never trusted. Writes are atomic renames, so two processes saving at once
leave one complete file (the last writer wins, after merging what it found on disk).

Racy entries: file timestamps are coarse (a kernel tick), so a file written in the same tick
as it was read could keep its stat while its content changes. Entries whose mtime or ctime is
within ``racy_window_ns`` of the moment the hashing started are therefore not remembered.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from .._hashing import ALGO_PREFIX
from ..store.atomic import atomic_write_bytes

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["CACHE_NAME", "RACY_WINDOW_NS", "CacheStats", "StatCache"]

CACHE_NAME = "stat-cache.v1"
MAGIC = b"LGSTATC\x00"
VERSION = 1
RACY_WINDOW_NS = 2_000_000_000
# Beyond this, entries not used by this process are dropped on save (about 150 B each).
MAX_ENTRIES = 500_000

_HEADER = struct.Struct("<8sII")
_REC = struct.Struct("<QQqqII32s")
_TRAILER = 32

Key = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


def stat_key(st: os.stat_result) -> Key:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass
class CacheStats:
    """Counters that show what the cache saved: ``hashed`` files were actually read."""

    hits: int = 0
    misses: int = 0
    hashed: int = 0
    bytes_hashed: int = 0
    racy: int = 0


class StatCache:
    """Absolute path -> (stat key, digest). Use ``StatCache.for_store`` or ``StatCache.load``."""

    def __init__(self, path: Path | None = None, *, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        self.path = path
        self.racy_window_ns = racy_window_ns
        self.stats = CacheStats()
        self._entries: dict[str, tuple[Key, bytes]] = {}
        self._used: set[str] = set()
        self._dirty = False
        self._loaded_stat: tuple[int, int, int] | None = None
        # Directory memo, in memory only: abspath -> (stat fingerprint of the walk, result).
        # A re-digest whose walk has the very same fingerprint skips per-file work entirely.
        self.trees: dict[str, tuple[list[tuple[Any, ...]], Any]] = {}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, *, racy_window_ns: int = RACY_WINDOW_NS) -> StatCache:
        cache = cls(path, racy_window_ns=racy_window_ns)
        found = _read(path)
        if found is not None:
            cache._entries, cache._loaded_stat = found
        return cache

    @classmethod
    def for_store(cls, store: Store, *, racy_window_ns: int = RACY_WINDOW_NS) -> StatCache:
        return cls.load(store.root / "cache" / CACHE_NAME, racy_window_ns=racy_window_ns)

    def __len__(self) -> int:
        return len(self._entries)

    # -- use ---------------------------------------------------------------------------------
    def lookup(self, abspath: str, st: os.stat_result) -> str | None:
        """The cached digest if the file's stat is exactly what it was when it was hashed."""
        hit = self._entries.get(abspath)
        if hit is not None and hit[0] == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            self.stats.hits += 1
            self._used.add(abspath)
            return ALGO_PREFIX + hit[1].hex()
        self.stats.misses += 1
        return None

    def remember(self, abspath: str, st: os.stat_result, digest: str, started_ns: int) -> bool:
        """Cache a digest computed from a read that began at ``started_ns`` (time.time_ns()).

        Refused (False) when the file changed too close to that moment to trust its stat."""
        if max(st.st_mtime_ns, st.st_ctime_ns) > started_ns - self.racy_window_ns:
            self.stats.racy += 1
            self._entries.pop(abspath, None)
            return False
        self._entries[abspath] = (stat_key(st), bytes.fromhex(digest[len(ALGO_PREFIX) :]))
        self._used.add(abspath)
        self._dirty = True
        return True

    def forget(self, abspath: str) -> None:
        if self._entries.pop(abspath, None) is not None:
            self._dirty = True

    # -- persistence -------------------------------------------------------------------------
    def save(self) -> None:
        """Write the cache atomically, merged with entries another process saved meanwhile."""
        if self.path is None or not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        current = _file_stat(self.path)
        if current is not None and current != self._loaded_stat:
            found = _read(self.path)
            if found is not None:
                theirs, _ = found
                theirs.update(self._entries)  # ours win: we just looked at these files
                self._entries = theirs
        if len(self._entries) > MAX_ENTRIES:
            self._entries = {k: v for k, v in self._entries.items() if k in self._used}
        atomic_write_bytes(self.path, _encode(self._entries))
        self._loaded_stat = _file_stat(self.path)
        self._dirty = False

    @staticmethod
    def now_ns() -> int:
        return time.time_ns()


def _file_stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _encode(entries: dict[str, tuple[Key, bytes]]) -> bytes:
    recs = bytearray()
    blob = bytearray()
    for path, ((ino, size, mtime, ctime), digest) in entries.items():
        raw = os.fsencode(path)
        recs += _REC.pack(ino, size, mtime, ctime, len(blob), len(raw), digest)
        blob += raw
    body = _HEADER.pack(MAGIC, VERSION, len(entries)) + recs + blob
    return body + blake3.blake3(body).digest()


def _read(path: Path) -> tuple[dict[str, tuple[Key, bytes]], tuple[int, int, int] | None] | None:
    """Entries of a valid cache file, else None (missing, foreign, truncated or corrupt)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    if len(data) < _HEADER.size + _TRAILER:
        return None
    body, trailer = data[:-_TRAILER], data[-_TRAILER:]
    magic, version, count = _HEADER.unpack_from(body)
    if magic != MAGIC or version != VERSION or blake3.blake3(body).digest() != trailer:
        return None
    start = _HEADER.size
    end = start + count * _REC.size
    if end > len(body):
        return None
    blob = memoryview(body)[end:]
    entries: dict[str, tuple[Key, bytes]] = {}
    for ino, size, mtime, ctime, off, n, digest in _REC.iter_unpack(body[start:end]):
        if off + n > len(blob):
            return None
        key = bytes(blob[off : off + n]).decode("utf-8", "surrogateescape")
        entries[key] = ((ino, size, mtime, ctime), digest)
    return entries, (st.st_ino, st.st_size, st.st_mtime_ns)
