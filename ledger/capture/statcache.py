"""A stat cache: a file whose (inode, size, mtime, ctime) is unchanged is not read again.

This is what makes the second digest of an unchanged dataset cost a directory walk instead
of reading every byte (git's index and DVC's state do the same). It also keeps, per directory
input, a *tree memo*: a signature of every entry's (path, inode, size, mtime, ctime, mode)
with the digests and listing results they produced, so a re-digest whose walk has the same
signature skips all per-file work. Stored in ``.ledger/cache/stat-cache.v2``, a binary file
(layout in docs/reference/data-digests.md):

    header   8s magic "LGSTATC\\0", u32 version (2), u32 count, u32 tree count  (little endian)
    records  count x (u64 inode, u64 size, i64 mtime_ns, i64 ctime_ns,
                      u32 path offset, u32 path length, 32 bytes BLAKE3)
    trees    tree count x (u32 path offset, u32 path length, 32 bytes signature,
                      32 bytes directory digest, 32 bytes manifest id, u64 n_files,
                      u64 n_bytes, u64 digests offset, u32 n_entries)
    blob     the absolute paths, os.fsencode'd, back to back; then each tree's entry
             digests, 32 bytes per entry in listing order (zeros for an empty directory)
    trailer  32 bytes: BLAKE3 of everything before it

A file that is short, has another magic or version, or fails its trailer is ignored: the
cache is rebuilt, never trusted. Writes are atomic renames, so two processes saving at once
leave one complete file (the last writer wins, after merging what it found on disk); they are
not fsynced (after a crash the file may be an older one, which its stat keys still judge). The
per-file records are decoded only when a lookup needs them: a tree-memo hit never does.

Racy entries: file timestamps are coarse (a kernel tick), so a file written in the same tick
as it was read could keep its stat while its content changes. Entries whose mtime or ctime is
within ``racy_window_ns`` of the moment the hashing started are therefore not remembered, and
a tree memo is kept only when every digest in it passed that rule.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from .._hashing import ALGO_PREFIX
from ..store.atomic import replace_bytes
from ..store.safe_read import NotRegularError, open_regular

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["CACHE_NAME", "RACY_WINDOW_NS", "CacheStats", "StatCache", "TreeMemo", "stat_key"]

CACHE_NAME = "stat-cache.v2"
MAGIC = b"LGSTATC\x00"
VERSION = 2
RACY_WINDOW_NS = 2_000_000_000
# Beyond this, entries not used by this process are dropped on save (about 150 B each).
MAX_ENTRIES = 500_000

_HEADER = struct.Struct("<8sIII")
_REC = struct.Struct("<QQqqII32s")
_TREE = struct.Struct("<II32s32s32sQQQI")
_TRAILER = 32
_CUT = len(ALGO_PREFIX)

Key = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
# A stat result's Key (one C call: the digest's walk takes it of every file it lists).
stat_key = attrgetter("st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")
Entries = dict[str, tuple[Key, bytes]]


def _raw(oid: str) -> bytes:
    return bytes.fromhex(oid[_CUT:])


@dataclass(slots=True)
class TreeMemo:
    """What one digest of a directory input produced, valid while ``signature`` matches.

    ``digests``: 32 bytes per listing entry, in listing order (zeros for an empty directory).
    ``manifest``: the data-manifest as JSON data, in memory only (rebuilt after a load)."""

    signature: bytes
    dir_digest: str
    files: str
    n_files: int
    n_bytes: int
    digests: bytes
    manifest: dict[str, Any] | None = None


@dataclass
class CacheStats:
    """Counters that show what the cache saved: ``hashed`` files were actually read."""

    hits: int = 0
    misses: int = 0
    hashed: int = 0
    bytes_hashed: int = 0
    racy: int = 0
    tree_hits: int = 0


class StatCache:
    """Absolute path -> (stat key, digest), plus tree memos by input directory.
    Use ``StatCache.for_store`` or ``StatCache.load``."""

    def __init__(self, path: Path | None = None, *, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        self.path = path
        self.racy_window_ns = racy_window_ns
        self.stats = CacheStats()
        self._parsed: Entries | None = {}
        self._pending: tuple[memoryview, memoryview] | None = None  # records, blob
        self._used: set[str] = set()
        self._used_trees: set[str] = set()
        self._dirty = False
        self._loaded_stat: tuple[int, int, int] | None = None
        self.trees: dict[str, TreeMemo] = {}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, *, racy_window_ns: int = RACY_WINDOW_NS) -> StatCache:
        cache = cls(path, racy_window_ns=racy_window_ns)
        found = _read(path)
        if found is not None:
            cache._pending, cache.trees, cache._loaded_stat = found
            cache._parsed = None
        return cache

    @classmethod
    def for_store(cls, store: Store, *, racy_window_ns: int = RACY_WINDOW_NS) -> StatCache:
        return cls.load(store.root / "cache" / CACHE_NAME, racy_window_ns=racy_window_ns)

    @property
    def _entries(self) -> Entries:
        """The per-file records, decoded on first use (a tree-memo hit never needs them)."""
        if self._parsed is None:
            if self._pending is None:
                raise TypeError("the stat cache has neither records nor their bytes")
            self._parsed = _decode_records(*self._pending)
            self._pending = None
        return self._parsed

    def __len__(self) -> int:
        return len(self._entries)

    # -- use ---------------------------------------------------------------------------------
    def lookup(self, abspath: str, st: os.stat_result) -> str | None:
        """The cached digest if the file's stat is exactly what it was when it was hashed."""
        hit = (self._parsed if self._parsed is not None else self._entries).get(abspath)
        if hit is not None and hit[0] == stat_key(st):
            self.stats.hits += 1
            self._used.add(abspath)
            return ALGO_PREFIX + hit[1].hex()
        self.stats.misses += 1
        return None

    def remember(self, abspath: str, st: os.stat_result, digest: str, started_ns: int) -> bool:
        """Cache a digest computed from a read that began at ``started_ns`` (time.time_ns()).

        Refused (False) when the file changed too close to that moment to trust its stat."""
        mtime, ctime = st.st_mtime_ns, st.st_ctime_ns
        entries = self._parsed if self._parsed is not None else self._entries
        if (mtime if mtime > ctime else ctime) > started_ns - self.racy_window_ns:
            self.stats.racy += 1
            entries.pop(abspath, None)
            return False
        # A cold digest calls this once a file: plain code (no helper calls) on purpose.
        entries[abspath] = ((st.st_ino, st.st_size, mtime, ctime), bytes.fromhex(digest[_CUT:]))
        self._used.add(abspath)
        self._dirty = True
        return True

    def tree(self, abspath: str, signature: bytes) -> TreeMemo | None:
        """The memo of the directory input ``abspath`` if its walk still has ``signature``."""
        memo = self.trees.get(abspath)
        if memo is None or memo.signature != signature:
            return None
        self.stats.tree_hits += 1
        self._used_trees.add(abspath)
        return memo

    def remember_tree(self, abspath: str, memo: TreeMemo) -> None:
        """Keep a directory's result; the caller vouches that no digest in it was racy."""
        old = self.trees.get(abspath)
        self.trees[abspath] = memo
        self._used_trees.add(abspath)
        if old is None or (old.signature, old.files) != (memo.signature, memo.files):
            self._dirty = True

    # -- persistence -------------------------------------------------------------------------
    def save(self) -> None:
        """Write the cache atomically, merged with entries another process saved meanwhile."""
        if self.path is None or not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        entries = self._entries
        current = _file_stat(self.path)
        if current is not None and current != self._loaded_stat:
            found = _read(self.path)
            if found is not None:
                pending, their_trees, _ = found
                theirs = _decode_records(*pending)
                theirs.update(entries)  # ours win: we just looked at these files
                self._parsed = entries = theirs
                their_trees.update(self.trees)
                self.trees = their_trees
        # A memo of an input that is gone only takes space (its digests are 32 B per file).
        self.trees = {k: v for k, v in self.trees.items() if os.path.isdir(k)}
        if len(entries) > MAX_ENTRIES:
            roots = tuple(p + os.sep for p in self._used_trees)
            self._parsed = entries = {
                k: v for k, v in entries.items() if k in self._used or k.startswith(roots)
            }
            self.trees = {k: v for k, v in self.trees.items() if k in self._used_trees}
        # Not fsynced: a cache is not worth a wait on the disk (10-40 ms of a cold digest of
        # 5,000 files here). A crash may leave the file old, empty or torn: the trailer
        # refuses a torn or empty one, and an old one is as true as when it was written
        # (every entry is keyed by the stat it was made from).
        replace_bytes(self.path, _encode(entries, self.trees), durable=False)
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


def _encode(entries: Entries, trees: dict[str, TreeMemo]) -> bytes:
    recs = bytearray()
    blob = bytearray()
    for path, ((ino, size, mtime, ctime), digest) in entries.items():
        raw = os.fsencode(path)
        recs += _REC.pack(ino, size, mtime, ctime, len(blob), len(raw), digest)
        blob += raw
    tree_paths = []
    for path in trees:
        raw = os.fsencode(path)
        tree_paths.append((len(blob), len(raw)))
        blob += raw
    tree_recs = bytearray()
    for (off, n), memo in zip(tree_paths, trees.values(), strict=True):
        tree_recs += _TREE.pack(
            off,
            n,
            memo.signature,
            _raw(memo.dir_digest),
            _raw(memo.files),
            memo.n_files,
            memo.n_bytes,
            len(blob),
            len(memo.digests) // 32,
        )
        blob += memo.digests
    body = _HEADER.pack(MAGIC, VERSION, len(entries), len(trees)) + recs + tree_recs + blob
    return body + blake3.blake3(body).digest()


def _decode_records(recs: memoryview, blob: memoryview) -> Entries:
    """The per-file records; none at all if any path lies outside the blob (never partly)."""
    entries: Entries = {}
    size_blob = len(blob)
    for ino, size, mtime, ctime, off, n, digest in _REC.iter_unpack(recs):
        if off + n > size_blob:
            return {}
        key = bytes(blob[off : off + n]).decode("utf-8", "surrogateescape")
        entries[key] = ((ino, size, mtime, ctime), digest)
    return entries


def _read(
    path: Path,
) -> tuple[tuple[memoryview, memoryview], dict[str, TreeMemo], tuple[int, int, int]] | None:
    """A valid cache file's records (still encoded), tree memos and file stat; else None
    (missing, foreign, truncated or corrupt)."""
    try:
        with open_regular(path) as f:  # a FIFO or a link there is not waited on: no cache
            st = os.fstat(f.fileno())
            data = f.read()
    except (OSError, NotRegularError):
        return None
    if len(data) < _HEADER.size + _TRAILER:
        return None
    body, trailer = memoryview(data)[:-_TRAILER], data[-_TRAILER:]
    magic, version, count, ntrees = _HEADER.unpack_from(body)
    if magic != MAGIC or version != VERSION or blake3.blake3(body).digest() != trailer:
        return None
    start = _HEADER.size
    tree_start = start + count * _REC.size
    end = tree_start + ntrees * _TREE.size
    if end > len(body):
        return None
    blob = body[end:]
    recs = body[start:tree_start]
    trees: dict[str, TreeMemo] = {}
    for off, n, sig, dd, files, n_files, n_bytes, doff, n_entries in _TREE.iter_unpack(
        body[tree_start:end]
    ):
        if off + n > len(blob) or doff + 32 * n_entries > len(blob):
            return None
        name = bytes(blob[off : off + n]).decode("utf-8", "surrogateescape")
        trees[name] = TreeMemo(
            signature=sig,
            dir_digest=ALGO_PREFIX + dd.hex(),
            files=ALGO_PREFIX + files.hex(),
            n_files=n_files,
            n_bytes=n_bytes,
            digests=bytes(blob[doff : doff + 32 * n_entries]),
        )
    return (recs, blob), trees, (st.st_ino, st.st_size, st.st_mtime_ns)
