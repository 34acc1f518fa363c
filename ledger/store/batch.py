"""Store many small files: each read once, and one directory fsync per fan, not per file.

``ObjectStore.put_file`` makes each object durable on its own: fsync the temp file, rename it,
fsync its directory. For thousands of small inputs the directory fsyncs (one per object, where
256 fan directories hold them all) and the sample-then-stream reads dominate. Here each file is
read once (hashed, judged for compression and written from the same buffer) and its temp file
fsynced, all from a pool; then every temp file is renamed into place and each fan directory is
fsynced once. (Fsyncing the temp files in bulk afterwards was slower on ext4 under load: the
dirty pages pile up and the writer is throttled.) The order that makes a crash harmless is
unchanged: an object's name appears only after its content is durable, and the caller writes
nothing that refers to these objects before ``put_files`` returns.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zstandard

from .._hashing import hash_bytes
from .atomic import fsync_dir
from .objects import CODEC_RAW, CODEC_ZSTD, MIN_COMPRESS, MIN_SAVING, ZSTD_LEVEL, ObjectStore

__all__ = ["SMALL", "put_files"]

# Files up to this size are staged in one read; larger ones go through ``put_file`` (streamed).
SMALL = 1 << 20
# Threads that read, hash and write (the GIL is released for I/O and BLAKE3) and that fsync.
_WORKERS = 4
# Temp files staged at once (bounds the temp directory, not memory: each is on disk).
_BATCH = 4096


def _stage(objects: ObjectStore, path: str) -> tuple[str, Path | None]:
    """(id, temp file) for one file; the temp file is None when the object is already stored
    or the file is large (then it was stored by ``put_file``)."""
    with open(path, "rb") as f:
        data = f.read(SMALL + 1)
        if len(data) > SMALL:
            f.seek(0)
            return objects.put_stream(f), None
    oid = hash_bytes(data)
    if objects.touch(oid):
        return oid, None
    payload, codec = data, CODEC_RAW
    if len(data) >= MIN_COMPRESS:
        packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)
        if len(packed) <= len(data) * (1 - MIN_SAVING):
            payload, codec = packed, CODEC_ZSTD
    fd, name = tempfile.mkstemp(dir=objects.tmp_dir, prefix="obj-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(bytes([codec]))
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise
    return oid, Path(name)


def put_files(objects: ObjectStore, paths: Sequence[str]) -> list[str]:
    """Store each file of ``paths`` (regular files); returns their ids, in order."""
    oids: list[str] = []
    for start in range(0, len(paths), _BATCH):
        oids += _put_batch(objects, paths[start : start + _BATCH])
    return oids


def _put_batch(objects: ObjectStore, paths: Sequence[str]) -> list[str]:
    with ThreadPoolExecutor(_WORKERS, thread_name_prefix="ledger-put") as pool:
        futures = [pool.submit(_stage, objects, p) for p in paths]
    staged: list[tuple[str, Path | None]] = []
    failed: BaseException | None = None
    for future in futures:  # all done: collect every temp file, so none is left behind
        try:
            staged.append(future.result())
        except BaseException as e:  # re-raised below, after the cleanup
            failed = failed or e
    try:
        if failed is not None:
            raise failed
        dirs: set[Path] = set()
        for oid, tmp in staged:
            if tmp is None:
                continue
            final = objects.path_of(oid)
            if objects.touch(oid):  # stored meanwhile (a duplicate in this batch, or another run)
                continue
            final.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(tmp, 0o444)
            os.replace(tmp, final)
            dirs.add(final.parent)
        with ThreadPoolExecutor(_WORKERS, thread_name_prefix="ledger-put") as pool:
            list(pool.map(fsync_dir, sorted(dirs)))
    finally:
        for _, tmp in staged:
            if tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
    return [oid for oid, _ in staged]
