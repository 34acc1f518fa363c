"""Input data digests for ``ledger record --input PATH``: before launch, and again after exit.

``digest_input`` walks an input (a file, or a directory recursively, in sorted order, symlinks
recorded as links and never followed), hashes each file with BLAKE3 unless the stat cache
vouches for it, and derives a directory digest from a canonical listing
(docs/reference/data-digests.md). ``store_inputs`` copies the content into the object store
afterwards, off the launch path. ``recheck`` digests again after the run and names what changed.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._hashing import hash_bytes, hash_stream
from ..errors import LedgerError, UsageError
from ..records.data import DataManifest, InputChange, InputDigest
from ..store import Store
from .statcache import StatCache

__all__ = ["MAX_NAMES", "StoreReport", "digest_input", "recheck", "store_inputs"]

MAX_NAMES = 1000  # names listed per kind of change; the counts stay exact
_WHOLE_READ = 8 << 20  # below this a file is read in one call (fastest for small files)
_STORE_WORKERS = 4  # object puts fsync each file: overlap the waits


class _Item:
    """One walked entry; ``digest`` is filled in by ``_fill``."""

    __slots__ = ("abspath", "digest", "rel", "st", "type")

    def __init__(self, rel: str, abspath: str, type: str, st: os.stat_result) -> None:
        self.rel = rel
        self.abspath = abspath
        self.type = type  # file | symlink | dir
        self.st = st
        self.digest: str | None = None


def _check_name(rel: str, root: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{os.path.join(root, rel)!r} has a file name that is not valid UTF-8",
            hint="rename it: records store names as UTF-8",
        ) from None


def _walk(root: str) -> list[_Item]:
    """Every entry below ``root``, sorted by relative path; empty directories included."""
    items: list[_Item] = []
    stack = [("", root)]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except PermissionError:
            raise UsageError(
                f"cannot list input directory {abs_dir}: permission denied",
                hint="make it readable, or leave it out of --input",
            ) from None
        if not entries and rel_dir:
            items.append(_Item(rel_dir, abs_dir, "dir", os.lstat(abs_dir)))
        prefix = rel_dir + "/" if rel_dir else ""
        for e in entries:
            st = e.stat(follow_symlinks=False)
            mode = st.st_mode
            if stat.S_ISREG(mode):
                items.append(_Item(prefix + e.name, e.path, "file", st))
            elif stat.S_ISDIR(mode):
                stack.append((prefix + e.name, e.path))
            elif stat.S_ISLNK(mode):
                items.append(_Item(prefix + e.name, e.path, "symlink", st))
            else:
                raise UsageError(
                    f"input {e.path} is not a regular file, directory or symlink",
                    hint="inputs may not contain FIFOs, sockets or devices; leave it out",
                )
    items.sort(key=lambda i: i.rel)
    for item in items:
        if not item.rel.isascii():
            _check_name(item.rel, root)
    return items


def _hash_one(abspath: str, cache: StatCache) -> tuple[str, os.stat_result]:
    """Read and hash a file; the stat returned is the opened file's, so it keys the cache."""
    started = StatCache.now_ns()
    try:
        fd = os.open(abspath, os.O_RDONLY)
    except PermissionError:
        raise UsageError(
            f"cannot read input file {abspath}: permission denied",
            hint="make it readable, or leave it out of --input",
        ) from None
    except FileNotFoundError:
        raise UsageError(f"input file {abspath} vanished while it was being digested") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        # Hash what this descriptor reads, so the stat and the digest describe the same file.
        digest = hash_bytes(f.read()) if st.st_size < _WHOLE_READ else hash_stream(f)  # type: ignore[arg-type]
    cache.stats.hashed += 1
    cache.stats.bytes_hashed += st.st_size
    cache.remember(abspath, st, digest, started)
    return digest, st


def _link_digest(abspath: str) -> str:
    return hash_bytes(os.fsencode(os.readlink(abspath)))


def _fill(items: list[_Item], cache: StatCache, workers: int) -> None:
    """Digest every file and symlink, from the cache where its stat vouches for it."""
    todo: list[_Item] = []
    lookup = cache.lookup
    for it in items:
        if it.type == "file":
            it.digest = lookup(it.abspath, it.st)
            if it.digest is None:
                todo.append(it)
        elif it.type == "symlink":
            it.digest = _link_digest(it.abspath)

    def run(batch: list[_Item]) -> None:
        for it in batch:
            it.digest, it.st = _hash_one(it.abspath, cache)

    if workers <= 1 or len(todo) < 2 * workers:
        run(todo)
        return
    # Interleaved slices keep the workers' shares even when file sizes cluster by name.
    with ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(run, todo[w::workers]) for w in range(workers)]:
            f.result()


def _manifest(items: list[_Item]) -> tuple[dict[str, Any], str, int, int]:
    """The data-manifest as canonical-ready JSON, its directory digest, file and byte counts.

    Built as plain data rather than models: on a warm re-digest this is most of the work.
    ``DataManifest.model_validate`` of the result is the same record (a test checks it)."""
    entries: list[dict[str, Any]] = []
    lines: list[bytes] = []
    n_files = n_bytes = 0
    for it in items:  # already sorted by path
        size = 0 if it.type == "dir" else it.st.st_size
        digest = it.digest or ""
        entries.append(
            {
                "digest": it.digest,
                "mode": stat.S_IMODE(it.st.st_mode),
                "path": it.rel,
                "size": size,
                "type": it.type,
            }
        )
        lines.append(f"{it.type}\x00{it.rel}\x00{size}\x00{digest}\n".encode())
        if it.type != "dir":
            n_files += 1
        if it.type == "file":
            n_bytes += size
    dir_digest = hash_bytes(b"".join(lines))
    raw = {
        "dir_digest": dir_digest,
        "entries": entries,
        "kind": DataManifest.KIND,
        "n_bytes": n_bytes,
        "n_files": n_files,
        "schema": DataManifest.SCHEMA,
    }
    return raw, dir_digest, n_files, n_bytes


def _canonical(value: Any) -> bytes:
    # canonical_json's encoding without its per-value type walk, which would triple the cost
    # of a warm digest; the values here are str/int/None by construction.
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def digest_input(
    path: Path, cache: StatCache, *, dvc: bool = True, workers: int | None = None
) -> InputDigest:
    """Digest one ``--input``: a file or a directory. Raises UsageError, naming the path, if it
    does not exist or cannot be read. ``dvc`` adds DVC's md5 where DVC tracks the path.
    ``workers`` hash cache misses in threads (default: up to 4); on 2 cores, reading through a
    cold page cache, threads cut a 5,000-file digest by 15-40% (docs/benchmarks.md)."""
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
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
        items = _walk(abspath)
        fingerprint = [
            (
                i.rel,
                i.type,
                i.st.st_ino,
                i.st.st_size,
                i.st.st_mtime_ns,
                i.st.st_ctime_ns,
                i.st.st_mode,
            )
            for i in items
        ]
        memo = cache.trees.get(abspath)
        if memo is not None and memo[0] == fingerprint:
            cache.stats.hits += len(items)
            raw, dir_digest, n_files, n_bytes, files = memo[1]
        else:
            racy = cache.stats.racy
            _fill(items, cache, workers)
            raw, dir_digest, n_files, n_bytes = _manifest(items)
            files = hash_bytes(_canonical(raw))
            if cache.stats.racy == racy:  # every digest is one the stat cache would vouch for
                cache.trees[abspath] = (fingerprint, (raw, dir_digest, n_files, n_bytes, files))
        result = InputDigest(
            path=given,
            abspath=abspath,
            kind="dir",
            digest=dir_digest,
            n_files=n_files,
            n_bytes=n_bytes,
            files=files,
        )
        result._manifest = raw
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
    new._manifest = old._manifest
    return new


@dataclass
class StoreReport:
    """What ``store_inputs`` did. ``changed``: files whose content no longer has the digest
    recorded before launch (they were modified since; recheck reports them too)."""

    stored: int = 0
    skipped: int = 0
    bytes_stored: int = 0
    changed: list[str] = field(default_factory=list)


def _manifest_of(d: InputDigest, store: Store | None) -> DataManifest:
    if d._manifest is not None:
        return DataManifest.model_validate(d._manifest)
    if store is not None and d.files is not None and store.objects.has(d.files):
        return DataManifest.model_validate(store.get_json(d.files))
    raise UsageError(
        f"no file listing for input {d.path!r}",
        hint="digest it with digest_input in this process, or pass the store holding its manifest",
    )


def store_inputs(digests: Iterable[InputDigest], store: Store) -> StoreReport:
    """Copy every input file into the object store (streamed, skipping ids already there), then
    the manifests, so replay can restore inputs by digest. Run it after the digest, not before
    launch: it reads and writes every new byte."""
    report = StoreReport()
    jobs: list[tuple[str, str, str, int]] = []  # abspath, type, expected digest, size
    manifests: list[tuple[InputDigest, DataManifest]] = []
    for d in digests:
        if d.kind == "file":
            jobs.append((d.abspath, "file", d.digest, d.n_bytes))
            continue
        manifest = _manifest_of(d, store)
        manifests.append((d, manifest))
        for e in manifest.entries:
            if e.digest is not None:
                jobs.append((os.path.join(d.abspath, e.path), e.type, e.digest, e.size))
    seen: set[str] = set()
    todo = []
    for job in jobs:
        if job[2] in seen or store.objects.has(job[2]):
            report.skipped += 1
        else:
            todo.append(job)
        seen.add(job[2])

    def put(job: tuple[str, str, str, int]) -> tuple[str, str, int]:
        abspath, kind, _, size = job
        if kind == "symlink":
            return abspath, store.objects.put_bytes(os.fsencode(os.readlink(abspath))), size
        return abspath, store.objects.put_file(abspath), size

    with ThreadPoolExecutor(_STORE_WORKERS) as pool:
        for (abspath, oid, size), job in zip(pool.map(put, todo), todo, strict=True):
            report.stored += 1
            report.bytes_stored += size
            if oid != job[2]:
                report.changed.append(abspath)
    for d, manifest in manifests:
        oid = store.put_json(manifest.to_json())
        if oid != d.files:
            raise UsageError(f"the manifest of input {d.path!r} does not match its digest record")
    return report


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
    if before._manifest is None and (store is None or before.files is None):
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
