"""Input data digests for ``ledger record --input PATH``: before launch, and again after exit.

``digest_input`` walks an input (a file, or a directory recursively, in sorted order, symlinks
recorded as links and never followed), hashes each file with BLAKE3 unless the stat cache
vouches for it, and derives a directory digest from a canonical listing
(docs/reference/data-digests.md). ``store_inputs`` copies the content into the object store
afterwards, off the launch path. ``recheck`` digests again after the run and names what changed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat, starmap
from operator import attrgetter
from pathlib import Path
from typing import Any

import blake3

from .._hashing import ALGO_PREFIX, CHUNK, hash_bytes, hasher_for
from .._progress import tick
from ..errors import LedgerError, UsageError
from ..records.data import DataManifest, InputChange, InputDigest
from ..store import Store
from .statcache import StatCache, TreeMemo, stat_key

__all__ = [
    "MAX_NAMES",
    "StoreReport",
    "digest_input",
    "manifest_data",
    "recheck",
    "store_inputs",
    "store_manifests",
    "stored_in",
]

MAX_NAMES = 1000  # names listed per kind of change; the counts stay exact
# O_NONBLOCK: a regular file reads the same with it, and a FIFO put where the walk saw a file
# opens at once instead of waiting for a writer (the fstat after the open refuses it).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_local = threading.local()
_json_string = json.encoder.encode_basestring  # json.dumps(ensure_ascii=False)'s, in C
_is_reg = stat.S_ISREG


# One walked entry: path relative to the input, its lstat, type (file | symlink | dir). Plain
# tuples, and no absolute path until a file must be read: a warm digest is mostly per-entry
# overhead. The absolute path is the input's path + "/" + the relative path.
Item = tuple[str, os.stat_result, str]


def _check_name(rel: str, root: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{os.path.join(root, rel)!r} has a file name that is not valid UTF-8",
            hint="rename it: records store names as UTF-8",
        ) from None


# A walked entry's (inode, size, mtime_ns, ctime_ns) in the walk's signature, as
# docs/reference/data-digests.md has it: 8 bytes each, little endian, the times in two's
# complement (before 1970 is negative). One pack per entry; the array of masked times it
# replaced held the same bytes (on little-endian hosts), so saved memos still match.
_KEY = struct.Struct("<QQqq")
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_mode_of = attrgetter("st_mode")
_S_IFMT = stat.S_IFMT
_ONLY_FILES = {stat.S_IFREG}


def _denied(abs_dir: str) -> UsageError:
    return UsageError(
        f"cannot list input directory {abs_dir}: permission denied",
        hint="make it readable, or leave it out of --input",
    )


def _walk(root: str, base: str) -> tuple[list[Item], bytes]:
    """Every entry below ``root`` in walk order (empty directories included), and the walk's
    signature: BLAKE3 of every entry's path and (inode, size, mtime_ns, ctime_ns) in walk
    order. Equal signatures mean a walk saw the very same stats, so the digests still hold (a
    chmod or any write moves ctime, which no one can set back); a walk that lists the same
    entries in another order merely misses the memo. ``items.sort()`` orders the entries by
    relative path (unique): only a listing needs that order, so a warm digest whose tree memo
    holds does not sort.

    One lstat per entry, relative to the directory's descriptor (fstatat: no full path to
    resolve each time) and kept with the item: nothing stats a file twice. A content edit
    moves only the file's own mtime and ctime, never its directory's, so no directory-level
    check can stand in for these lstats; they are most of a warm digest (5,000 files: 12 ms of
    its 16 ms here, 7 ms of them in the kernel). What remains is kept out of the interpreter: a
    directory holding only regular files (most of a dataset) gets its items, signature keys
    and names by ``map``/``zip`` over its lstats, the per-entry loop only for the others."""
    items: list[Item] = []
    keys: list[bytes] = []
    names: list[str] = []  # the relative paths in walk order: whole directories, or one each
    pack = _KEY.pack
    lstat = os.lstat
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        abs_dir = base + rel_dir if rel_dir else root
        prefix = rel_dir + "/" if rel_dir else ""
        try:
            fd = os.open(abs_dir, _DIR_FLAGS)
        except PermissionError:
            raise _denied(abs_dir) from None
        try:
            listed = os.listdir(fd)
            stats = [lstat(name, dir_fd=fd) for name in listed]
        except PermissionError:
            raise _denied(abs_dir) from None
        finally:
            os.close(fd)
        if not listed:
            if rel_dir:  # an empty directory is an entry of its own
                st = lstat(abs_dir)
                items.append((rel_dir, st, "dir"))
                keys.append(pack(st.st_ino, 0, st.st_mtime_ns, st.st_ctime_ns))
                names.append(rel_dir)
            continue
        if set(map(_S_IFMT, map(_mode_of, stats))) == _ONLY_FILES:
            items += zip(map(prefix.__add__, listed), stats, repeat("file"))
            keys += starmap(pack, map(stat_key, stats))
            names.append(prefix + ("\x00" + prefix).join(listed))
            continue
        for name, st in zip(listed, stats, strict=True):
            mode = st.st_mode
            if _is_reg(mode):
                items.append((prefix + name, st, "file"))
            elif stat.S_ISDIR(mode):
                stack.append(prefix + name)
                continue
            elif stat.S_ISLNK(mode):
                items.append((prefix + name, st, "symlink"))
            else:
                raise UsageError(
                    f"input {abs_dir}/{name} is not a regular file, directory or symlink",
                    hint="inputs may not contain FIFOs, sockets or devices; leave it out",
                )
            keys.append(pack(*stat_key(st)))
            names.append(prefix + name)
    joined = "\x00".join(names)
    if not joined.isascii():
        for item in items:
            _check_name(item[0], root)
    h = blake3.blake3(b"".join(keys))
    h.update(joined.encode("utf-8", "surrogateescape"))
    return items, h.digest()


def _buffer(want: int) -> memoryview:
    """This thread's read buffer, at least ``want`` bytes (kept: a digest's workers read file
    after file into it; a fresh bytes object per file cost an allocation and a copy)."""
    buf: bytearray | None = getattr(_local, "buf", None)
    if buf is None or len(buf) < want:
        buf = _local.buf = bytearray(want)
    return memoryview(buf)


def _read_digest(fd: int, size: int) -> tuple[str, int]:
    """BLAKE3 of everything ``fd`` reads from its offset to its end, and how many bytes that
    was. ``size``: the file's size by ``fstat``. The first read asks for one byte more than
    that: a read that comes back short at exactly ``size`` bytes is the end (a regular file
    reads short only there), so a small file is one ``read``, without the second one that
    finds the end. A file that grew or shrank meanwhile is read to its end all the same."""
    want = size + 1
    if want <= CHUNK:  # the common case, kept plain: most of a cold digest's files
        buf: bytearray | None = getattr(_local, "buf", None)
        if buf is None or len(buf) < want:
            buf = _local.buf = bytearray(want)
        view = memoryview(buf)
        n = os.readv(fd, [view[:want]])
        if n == size:
            return ALGO_PREFIX + blake3.blake3(view[:n]).hexdigest(), n
        h = blake3.blake3(view[:n])
        total = n
    else:
        view = _buffer(CHUNK)
        h, want, total = hasher_for(size), CHUNK, 0
    while n := os.readv(fd, [view[:want]]):
        h.update(view[:n])
        total += n
        if total == size and n < want:
            break
        want = len(view)
    return ALGO_PREFIX + h.hexdigest(), total


def _open_error(abspath: str, e: OSError) -> UsageError:
    if isinstance(e, PermissionError):
        return UsageError(
            f"cannot read input file {abspath}: permission denied",
            hint="make it readable, or leave it out of --input",
        )
    if isinstance(e, FileNotFoundError):
        return UsageError(f"input file {abspath} vanished while it was being digested")
    return UsageError(f"cannot open input file {abspath}: {e.strerror or e}")


def _open_input(abspath: str) -> int:
    """A descriptor to read an input file through, or a UsageError that names it."""
    try:
        return os.open(abspath, _READ_FLAGS)
    except OSError as e:
        raise _open_error(abspath, e) from None


def _hash_open(abspath: str, fd: int, cache: StatCache) -> tuple[str, os.stat_result]:
    """Read and hash the file open at ``fd`` (the caller closes it); the stat returned is the
    descriptor's, so it keys the cache with the very file that was read."""
    started = StatCache.now_ns()
    try:
        st = os.fstat(fd)
        if not _is_reg(st.st_mode):
            raise UsageError(
                f"input {abspath} is not a regular file (it was replaced while being digested)",
                hint="inputs may not contain FIFOs, sockets or devices; leave it out",
            )
        # Hash what this descriptor reads, so the stat and the digest describe the same file.
        size = st.st_size
        digest, n = _read_digest(fd, size)
        if n != size:  # written meanwhile: the stat after the read describes more of it
            st = os.fstat(fd)
            size = st.st_size
    except OSError as e:
        raise UsageError(f"cannot read input file {abspath}: {e.strerror or e}") from None
    counts = cache.stats
    counts.hashed += 1
    counts.bytes_hashed += size
    tick(1, size)
    cache.remember(abspath, st, digest, started)
    return digest, st


def _hash_one(abspath: str, cache: StatCache) -> tuple[str, os.stat_result]:
    """Read and hash one file. Four system calls a small file: open, fstat, one read, close."""
    fd = _open_input(abspath)
    try:
        return _hash_open(abspath, fd, cache)
    finally:
        os.close(fd)


def _link_digest(abspath: str) -> str:
    return hash_bytes(os.fsencode(os.readlink(abspath)))


_fadvise = getattr(os, "posix_fadvise", None)  # Linux and most Unix; not macOS
READAHEAD_FILES = 256  # files opened and hinted ahead of the readers, all readers together
READAHEAD_MAX_SIZE = 1 << 20  # larger files: the kernel's own sequential read-ahead serves them
SMALL_FILES = 256 << 10  # mean size of the files to read below which one reader reads them all
_NO_FDS = (errno.EMFILE, errno.ENFILE)
_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", 3)


def _readers(sizes: list[int], workers: int) -> int:
    """How many threads read ``sizes`` (the files to read), given ``workers`` at most.

    Each file costs a reader five system calls, and each call hands the GIL to another
    reader and back: for small files those hand-offs cost more than a second core gives
    (5,000 files of 40 kB, warm, 2 cores under load: one reader 0.24 s of CPU, two 0.57 s;
    20,000 of 4 kB: 0.39 s against 0.72 s; on the idle machine two readers were a little
    faster, 0.41 s against 0.45 s cold, for twice the CPU). With the read-ahead one reader
    also keeps the disk busy, so small files get one reader and large ones (long reads and
    hashing, which release the GIL) get ``workers``. Without read-ahead every reader blocked
    on a cold file leaves the disk one request, so the count stays ``workers``."""
    if workers <= 1 or len(sizes) < 2 * workers:
        return 1
    if _fadvise is not None and sum(sizes) < SMALL_FILES * len(sizes):
        return 1
    return workers


def _window(readers: int) -> int:
    """Files each reader keeps open and hinted ahead of the one it reads; 1 (no read-ahead)
    without posix_fadvise. Bounded by ``READAHEAD_FILES`` and by an eighth of the process's
    descriptor limit, so that a digest never takes the descriptors the rest of it needs."""
    if _fadvise is None:
        return 1
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 8 * READAHEAD_FILES
    except (ImportError, OSError, ValueError):
        soft = 1024
    return max(1, min(READAHEAD_FILES, soft // 8) // readers)


def _fill(
    items: list[Item], base: str, cache: StatCache, workers: int
) -> tuple[list[str | None], bool]:
    """Every entry's digest, from the cache where its stat vouches for it, and whether every
    file read had the stat the walk saw. A file that is read gets the opened file's stat in
    ``items``, so the listing's size and the digest describe the same content.

    Read-ahead: a reader opens the next files of its share before it reads the current one
    (a bounded window, ``_window``) and tells the kernel it will read them
    (``posix_fadvise(WILLNEED)``: the kernel starts reading their pages and returns). A reader
    waiting on a cold file would leave the disk one request to do; with the next files' reads
    queued, the disk works on many at once and the reader finds pages waiting. A hint changes
    no byte read: every file is read, stat'ed and hashed through its own descriptor, and a file
    that cannot be opened stops the digest with its error. Files over ``READAHEAD_MAX_SIZE``
    are opened but not hinted: the kernel's own sequential read-ahead serves them."""
    digests: list[str | None] = [None] * len(items)
    moved: list[str] = []
    todo: list[int] = []
    lookup = cache.lookup if len(cache) else None  # an empty cache: every file is a miss
    for i, (rel, st, type) in enumerate(items):
        if type == "file":
            digest = None if lookup is None else lookup(base + rel, st)
            if digest is None:
                todo.append(i)
            digests[i] = digest
        elif type == "symlink":
            digests[i] = _link_digest(base + rel)
    if lookup is None:
        cache.stats.misses += len(todo)
    if not todo:
        return digests, True

    readers = _readers([items[i][1].st_size for i in todo], workers)
    window = _window(readers) if len(todo) > 1 else 1
    failed = threading.Event()  # one reader's error stops the others at their next file

    def run(share: list[int]) -> None:
        # One pass of this loop per file: its work is inlined (no helper calls beyond the
        # system calls and ``_hash_open``), as it is most of a cold digest's Python time.
        opened: deque[tuple[int, int]] = deque()  # (item, fd), in reading order
        pop, push = opened.popleft, opened.append
        nxt, end = 0, len(share)  # next position in ``share`` to open; its end
        hint = _fadvise if window > 1 else None
        try:
            while True:
                while nxt < end and len(opened) < window:  # open ahead, up to the window
                    i = share[nxt]
                    rel, seen, _ = items[i]
                    try:
                        fd = os.open(base + rel, _READ_FLAGS)
                    except OSError as e:
                        if opened and e.errno in _NO_FDS:
                            break  # out of descriptors: read what is open, then try again
                        raise _open_error(base + rel, e) from None
                    nxt += 1
                    if hint is not None and seen.st_size <= READAHEAD_MAX_SIZE:
                        try:  # noqa: SIM105 (a with-block costs more in this per-file loop)
                            hint(fd, 0, 0, _WILLNEED)
                        except OSError:
                            pass  # a hint is only a hint
                    push((i, fd))
                if not opened or failed.is_set():
                    return
                i, fd = pop()
                rel, seen, type = items[i]
                try:
                    digests[i], st = _hash_open(base + rel, fd, cache)
                finally:
                    os.close(fd)
                if stat_key(st) != stat_key(seen):
                    moved.append(rel)
                    items[i] = (rel, st, type)
        except BaseException:
            failed.set()
            raise
        finally:
            for _, fd in opened:
                os.close(fd)

    if readers == 1:
        run(todo)
    else:
        from concurrent.futures import ThreadPoolExecutor  # ~5 ms, only for large files

        # Interleaved shares keep the readers even when file sizes cluster by name.
        with ThreadPoolExecutor(readers) as pool:
            for f in [pool.submit(run, todo[w::readers]) for w in range(readers)]:
                f.result()
    return digests, not moved


_NO_DIGEST = bytes(32)


def _digest_blob(digests: list[str | None]) -> bytes:
    """32 bytes per entry, in listing order; zeros for an empty directory."""
    cut = len(ALGO_PREFIX)
    return b"".join(bytes.fromhex(d[cut:]) if d is not None else _NO_DIGEST for d in digests)


def _digests_from(items: list[Item], blob: bytes) -> list[str | None]:
    hexes = blob.hex()
    return [
        None if it[2] == "dir" else ALGO_PREFIX + hexes[64 * i : 64 * i + 64]
        for i, it in enumerate(items)
    ]


def _described(
    items: list[Item], digests: list[str | None]
) -> tuple[str, int, int, dict[str, Any], str]:
    """A digested directory in one pass over its sorted entries: the directory digest over
    the canonical listing, the file and byte counts, the data-manifest as JSON data and that
    manifest's id.

    The id is BLAKE3 of the manifest's canonical JSON (``_canonical(manifest)``), written
    here entry by entry instead: ``json.dumps`` of 5,000 entry dicts with sorted keys took
    twice as long. The text is the same byte for byte (the keys below are in sorted order;
    names are escaped by ``json``'s own encoder; a test compares the two)."""
    lines: list[str] = []
    texts: list[str] = []
    entries: list[dict[str, Any]] = []
    n_files = n_bytes = 0
    line, text, entry = lines.append, texts.append, entries.append
    quote = _json_string
    for (rel, st, type), digest in zip(items, digests, strict=True):  # sorted by path
        if type == "dir":
            size = 0
        else:
            size = st.st_size
            n_files += 1
            if type == "file":
                n_bytes += size
        mode = st.st_mode & 0o7777
        line(f"{type}\x00{rel}\x00{size}\x00{digest or ''}\n")
        oid = "null" if digest is None else '"' + digest + '"'  # b3: and hex: nothing to escape
        text(f'{{"digest":{oid},"mode":{mode},"path":{quote(rel)},"size":{size},"type":"{type}"}}')
        entry({"digest": digest, "mode": mode, "path": rel, "size": size, "type": type})
    dir_digest = hash_bytes("".join(lines).encode())
    raw = _manifest_dict(dir_digest, entries, n_files, n_bytes)
    body = (
        f'{{"dir_digest":{quote(dir_digest)},"entries":[{",".join(texts)}],'
        f'"kind":{quote(DataManifest.KIND)},"n_bytes":{n_bytes},"n_files":{n_files},'
        f'"schema":{int(DataManifest.SCHEMA)}}}'
    ).encode()
    return dir_digest, n_files, n_bytes, raw, hash_bytes(body)


def _raw_manifest(
    items: list[Item], digests: list[str | None], dir_digest: str, n_files: int, n_bytes: int
) -> dict[str, Any]:
    """The data-manifest as canonical-ready JSON data.

    Built as plain data rather than models: on a warm re-digest this is most of the work.
    ``DataManifest.model_validate`` of the result is the same record (a test checks it)."""
    entries = [
        {
            "digest": digest,
            "mode": st.st_mode & 0o7777,
            "path": rel,
            "size": 0 if type == "dir" else st.st_size,
            "type": type,
        }
        for (rel, st, type), digest in zip(items, digests, strict=True)
    ]
    return _manifest_dict(dir_digest, entries, n_files, n_bytes)


def _manifest_dict(
    dir_digest: str, entries: list[dict[str, Any]], n_files: int, n_bytes: int
) -> dict[str, Any]:
    """A data-manifest's fields as JSON data, around its ``entries``."""
    return {
        "dir_digest": dir_digest,
        "entries": entries,
        "kind": DataManifest.KIND,
        "n_bytes": n_bytes,
        "n_files": n_files,
        "schema": DataManifest.SCHEMA,
    }


def _canonical(value: Any) -> bytes:
    # canonical_json's encoding without its per-value type walk, which would triple the cost
    # of a warm digest; the values here are str/int/None by construction.
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def read_workers() -> int:
    """Threads that read and hash cache misses of large files (``_readers``: small ones get
    one). With the read-ahead (``posix_fadvise``) the kernel keeps the disk busy and the
    readers are CPU work: one per core, at least 2, at most 8. Without it a file read through
    a cold page cache is a wait on the disk, not work for a core (read and BLAKE3 release the
    GIL): 4 per core, at most 8."""
    cores = os.cpu_count() or 1
    if _fadvise is not None:
        return max(2, min(8, cores))
    return min(8, 4 * cores)


def digest_input(
    path: Path, cache: StatCache, *, dvc: bool = True, workers: int | None = None
) -> InputDigest:
    """Digest one ``--input``: a file or a directory. Raises UsageError, naming the path, if it
    does not exist or cannot be read. ``dvc`` adds DVC's md5 where DVC tracks the path.
    ``workers`` hash cache misses in threads (default: ``read_workers()``)."""
    if workers is None:
        workers = read_workers()
    given = os.fspath(path)
    abspath = os.path.abspath(given)
    try:
        st = os.stat(abspath)  # the input itself may be a symlink the user chose: follow it
    except FileNotFoundError:
        raise UsageError(
            f"input {given!r} does not exist",
            hint="check the --input path (relative paths start from the current directory)",
        ) from None
    except PermissionError:
        raise UsageError(f"cannot access input {given!r}: permission denied") from None
    if stat.S_ISREG(st.st_mode):
        digest = cache.lookup(abspath, st)
        if digest is None:
            digest, st = _hash_one(abspath, cache)
        result = InputDigest(
            path=given,
            abspath=abspath,
            kind="file",
            digest=digest,
            n_files=1,
            n_bytes=st.st_size,
            mode=stat.S_IMODE(st.st_mode),
        )
    elif stat.S_ISDIR(st.st_mode):
        base = abspath if abspath.endswith("/") else abspath + "/"
        items, signature = _walk(abspath, base)
        memo = cache.tree(abspath, signature)
        listing: tuple[TreeMemo, list[Item]] | None = None
        if memo is not None:
            cache.stats.hits += len(items)
            if memo.manifest is None:
                listing = (memo, items)  # built if store_inputs or recheck asks: most never do
        else:
            racy = cache.stats.racy
            items.sort()  # listing order: the reads follow it, and the listing is made from it
            digests, as_walked = _fill(items, base, cache, workers)
            dir_digest, n_files, n_bytes, raw, files = _described(items, digests)
            memo = TreeMemo(
                signature=signature,
                dir_digest=dir_digest,
                files=files,
                n_files=n_files,
                n_bytes=n_bytes,
                digests=_digest_blob(digests),
                manifest=raw,
            )
            # Kept only if every digest is one the stat cache would vouch for, and every file
            # read still had the stat the signature was made from.
            if as_walked and cache.stats.racy == racy:
                cache.remember_tree(abspath, memo)
        result = InputDigest(
            path=given,
            abspath=abspath,
            kind="dir",
            digest=memo.dir_digest,
            n_files=memo.n_files,
            n_bytes=memo.n_bytes,
            files=memo.files,
        )
        result._manifest, result._listing = memo.manifest, listing
    else:
        raise UsageError(f"input {given!r} is not a regular file or a directory")
    if dvc:
        from .dvcinfo import dvc_info, find_dvc_root

        if find_dvc_root(Path(abspath)) is not None:
            info = dvc_info(Path(abspath))
            if info is not None:
                result = _with_manifest(result.model_copy(update={"dvc": info}), result)
    return result


def _with_manifest(new: InputDigest, old: InputDigest) -> InputDigest:
    new._manifest, new._listing = old._manifest, old._listing
    return new


@dataclass
class StoreReport:
    """What ``store_inputs`` did. ``changed``: files whose content no longer has the digest
    recorded before launch (they were modified since; recheck reports them too)."""

    stored: int = 0
    skipped: int = 0
    bytes_stored: int = 0
    changed: list[str] = field(default_factory=list)


# A warm digest keeps its walk (``InputDigest._listing``) instead of a listing: building 5,000
# small dicts was a sixth of a warm digest. Built under this lock: a list being sorted looks
# empty to another thread meanwhile.
_listing_lock = threading.Lock()


def manifest_data(d: InputDigest, store: Store | None = None) -> dict[str, Any] | None:
    """A directory input's data-manifest as JSON data: from this process's digest (built now
    if a warm digest deferred it), else from ``store``; None if neither has it."""
    if d._manifest is not None:
        return d._manifest
    if d.files is None:
        return None
    if d._listing is not None:
        memo, items = d._listing
        with _listing_lock:
            if memo.manifest is None:
                items.sort()  # the walk's order; the memo's digests are in listing order
                digests = _digests_from(items, memo.digests)
                memo.manifest = _raw_manifest(
                    items, digests, memo.dir_digest, memo.n_files, memo.n_bytes
                )
        d._manifest, d._listing = memo.manifest, None
        return d._manifest
    if store is not None and store.objects.has(d.files):
        data: dict[str, Any] = store.get_json(d.files)
        return data
    return None


def stored_in(d: InputDigest, store: Store) -> bool:
    """Whether ``store`` holds everything replay needs to restore the input ``d``: a file's
    content, a directory's manifest and every file and symlink it lists. Each object found is
    touched (``ObjectStore.touch``): the run about to be sealed reuses it."""
    if d.kind == "file":
        return store.objects.touch(d.digest)
    if d.files is None or not store.objects.touch(d.files):
        return False
    data = manifest_data(d, store)
    if data is None:
        return False
    for entry in data.get("entries", []):
        oid = entry.get("digest")
        if oid is not None and not store.objects.touch(oid):
            return False
    return True


def _manifest_of(d: InputDigest, store: Store | None) -> DataManifest:
    data = manifest_data(d, store)
    if data is None:
        raise UsageError(
            f"no file listing for input {d.path!r}",
            hint="digest it with digest_input in this process, or pass the store holding "
            "its manifest",
        )
    return DataManifest.model_validate(data)


def _entries_of(d: InputDigest, store: Store) -> list[tuple[str, str, str | None, int]]:
    """A directory input's entries: (path, type, digest, size) each. The listing this process
    built (``manifest_data`` without a store) is read as it is: validating 5,000 entries as
    models cost 16 ms, a fifth of the time ``store_inputs`` spends outside the copy. One read
    back from the store is validated (its paths are joined to the input's)."""
    own = manifest_data(d)
    if own is not None:
        return [(e["path"], e["type"], e["digest"], e["size"]) for e in own["entries"]]
    return [(e.path, e.type, e.digest, e.size) for e in _manifest_of(d, store).entries]


def store_inputs(digests: Iterable[InputDigest], store: Store) -> StoreReport:
    """Copy every input file into the object store (streamed, skipping ids already there), then
    the manifests, so replay can restore inputs by digest. Run it after the digest, not before
    launch: it reads and writes every new byte."""
    report = StoreReport()
    jobs: list[tuple[str, str, str, int]] = []  # abspath, type, expected digest, size
    dirs: list[InputDigest] = []
    for d in digests:
        if d.kind == "file":
            jobs.append((d.abspath, "file", d.digest, d.n_bytes))
            continue
        dirs.append(d)
        for path, type, digest, size in _entries_of(d, store):
            if digest is not None:
                jobs.append((os.path.join(d.abspath, path), type, digest, size))
    stored = store.objects.touch_all({job[2] for job in jobs})
    seen: set[str] = set()
    todo = []
    for job in jobs:
        if job[2] in seen or job[2] in stored:
            report.skipped += 1
        else:
            todo.append(job)
        seen.add(job[2])

    # Regular files go in one batch (one durability barrier for all); links one by one.
    from ..store.batch import put_files

    files = [job for job in todo if job[1] != "symlink"]
    links = [job for job in todo if job[1] == "symlink"]
    oids = put_files(store.objects, [job[0] for job in files], [job[3] for job in files])
    oids += [store.objects.put_bytes(os.fsencode(os.readlink(job[0]))) for job in links]
    for oid, (abspath, _, expected, size) in zip(oids, files + links, strict=True):
        report.stored += 1
        report.bytes_stored += size
        tick(1, size)
        if oid != expected:
            report.changed.append(abspath)
    store_manifests(dirs, store)
    return report


def store_manifests(digests: Iterable[InputDigest], store: Store) -> None:
    """Store the directory inputs' data-manifests, unless they are there (``touch``).

    The recorder calls this before it publishes the ``running`` record: the contract links each
    manifest (``files``), so a recorder killed at any later point leaves no reference to a
    missing object. The manifest's file digests are content links, which may name content not
    stored yet (or never: ``--no-store-inputs``). Replay needs the listing (empty directories,
    permission bits) to rebuild an input from the store or DVC's cache."""
    for d in digests:
        if d.kind == "dir" and d.files is not None and not store.objects.touch(d.files):
            data = manifest_data(d)
            if data is None:  # a digest read back from a record: only the store had it
                raise UsageError(f"no file listing for input {d.path!r} to store")
            # The raw listing's canonical bytes are the record's (docs/reference/data-digests.md);
            # the id check below proves it for this one.
            oid = store.objects.put_bytes(_canonical(data))
            if oid != d.files:
                raise UsageError(f"the manifest of input {d.path!r} does not match its record")


def _names(names: list[str]) -> list[str]:
    return names[:MAX_NAMES]


def recheck(
    before: InputDigest, cache: StatCache, store: Store | None = None
) -> InputChange | None:
    """Digest ``before``'s path again (cheap when the stat cache vouches for every file).
    None if unchanged; else what was added, removed and modified. ``store`` is needed only for
    a digest that was loaded from a record rather than made in this process."""
    try:
        after = digest_input(Path(before.abspath), cache, dvc=False)
    except LedgerError as e:
        gone = not os.path.lexists(before.abspath)
        return InputChange(
            path=before.path, before=before.digest, after=None, error=None if gone else e.message
        )
    if after.digest == before.digest and after.kind == before.kind:
        return None
    if before.kind == "file" or after.kind == "file":
        return InputChange(
            path=before.path,
            before=before.digest,
            after=after.digest,
            modified=[before.path],
            n_modified=1,
        )
    if manifest_data(before, store) is None:
        # A digest read back from a record, without its store: the change is known, not where.
        return InputChange(path=before.path, before=before.digest, after=after.digest)
    old = {e.path: (e.type, e.digest) for e in _manifest_of(before, store).entries}
    new = {e.path: (e.type, e.digest) for e in _manifest_of(after, None).entries}
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    modified = sorted(p for p in old.keys() & new.keys() if old[p] != new[p])
    return InputChange(
        path=before.path,
        before=before.digest,
        after=after.digest,
        added=_names(added),
        removed=_names(removed),
        modified=_names(modified),
        n_added=len(added),
        n_removed=len(removed),
        n_modified=len(modified),
        truncated=max(len(added), len(removed), len(modified)) > MAX_NAMES,
    )
