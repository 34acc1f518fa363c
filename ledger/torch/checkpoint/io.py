"""Tensor bytes to objects and back: hash once, write only what is new, verify before use.

Writes go straight from the tensor's memory (no copy for contiguous CPU tensors) through
``write.ChunkWriter``, which fsyncs and names them on threads of its own while the workers
go on, and says which chunks were new (the save reports them).
A chunk whose bytes equal what the last save of that tensor stored is not hashed again
(``reuse``: a bitwise comparison with the mapped object file).
Reads go straight into a freshly allocated tensor, hashed piece by piece as the bytes arrive;
nobody sees it before its hash matched. A range of a tensor (what a reshard needs of a saved
piece) reads the chunks that hold it, each whole: an object's id is the hash of all its bytes,
so a chunk is the smallest part whose bytes can be verified.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import blake3
import torch
import zstandard

from ..._hashing import ALGO_PREFIX, hash_bytes
from ...errors import CorruptObjectError, MissingObjectError, UsageError
from ...records.checkpoint import TensorEntry
from ...store import ObjectStore
from ...store.objects import MIN_SAVING
from ...store.pool import KeptPool
from .codec import tensor_bytes, torch_dtype
from .reuse import keep_only, last_change, likely_new, remember, reused
from .write import SAVING_BY_DEFAULT, ChunkWriter, Written, compression_pays

__all__ = [
    "CHUNK_SIZE",
    "WriteStats",
    "map_threads",
    "min_saving",
    "read_ranges",
    "read_tensors",
    "run_aside",
    "write_tensors",
]

CHUNK_SIZE = 64 << 20  # one object per 64 MiB of a tensor
# The codec is judged on this much of each chunk, not the store's 1 MiB: 64 KiB costs ~0.1 ms,
# 1 MiB (or a whole small chunk) ~1 ms, paid per chunk on every save of fresh weights.
_SAMPLE = 64 << 10
_WORKERS = 4  # hashing, reading and fsync release the GIL; overlap them


def _cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# A save's workers only compare, hash and compress (CPU work; the chunk writer's own threads
# write and fsync): more of them than cores only take turns on the CPU, and slow down the
# writer's threads, whose writes keep the disk busy. 200 MB, 10% changed, 2 cores: 4 workers
# 32.5-34.0 ms a save, 2 workers 31.6-32.5 ms (issue #38).
_SAVE_WORKERS = max(1, min(_WORKERS, _cores()))
# A load hashes each piece right after reading it, while it is still in the CPU cache, instead
# of reading a whole chunk and then hashing it from memory again (one pass over RAM, not two).
_READ_PIECE = 256 << 10


_T = TypeVar("_T")
_R = TypeVar("_R")


# Threads that help ``map_threads`` callers, kept from one call to the next: starting a thread
# waits until it runs, a wake-up that costs milliseconds on a busy machine, and a sharded save
# started 5-10 of them one after the other (rank 0: 7 in one call). A pool of its own, not the
# chunk writer's: its syncers must never wait behind helpers that wait for them.
_HELPERS = 8
_helper_pool = KeptPool(_HELPERS, "ledger-ckpt-work")


def run_aside(fn: Callable[[], None]) -> threading.Event:
    """Run ``fn`` (which must not raise: it keeps its own errors) on a helper of the pool
    (``_helper_pool``); the event is set once it returned."""
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        finally:
            done.set()

    _helper_pool().submit(run)
    return done


def map_threads(fn: Callable[[_T], _R], items: Sequence[_T], workers: int = _WORKERS) -> list[_R]:
    """``[fn(x) for x in items]`` on this thread and up to ``workers - 1`` helpers of the
    process's pool (``_helper_pool``); the first error is raised.

    Not ``ThreadPoolExecutor``: it refuses work once interpreter shutdown has begun, which is
    exactly when a background save that nobody waited for must still finish (the pool's
    threads are daemons, alive until the interpreter ends, and the calling thread works too).
    A helper that has not started by the time this thread runs out of items is not waited
    for (another call may hold the pool's threads): it finds the call closed and returns.
    """
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    todo = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while not errors:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:
                errors.append(e)

    running = 0  # helpers inside ``work``
    closed = False  # this thread is done: helpers starting now have nothing to do
    idle = threading.Condition()

    def helper() -> None:
        nonlocal running
        with idle:
            if closed:
                return
            running += 1
        try:
            work()
        finally:
            with idle:
                running -= 1
                idle.notify_all()

    pool = _helper_pool() if min(workers, len(items)) > 1 else None
    for _ in range(min(workers, len(items)) - 1):
        pool.submit(helper)  # type: ignore[union-attr]
    work()  # this thread works too
    with idle:
        closed = True
        idle.wait_for(lambda: running == 0)
    if errors:
        raise errors[0]
    return results


@dataclass
class WriteStats:
    bytes_total: int = 0
    bytes_new: int = 0
    objects_new: int = 0
    bytes_skipped_hash: int = 0  # bytes trusted unchanged by their version counter
    bytes_reused: int = 0  # bytes found equal to the last save's by comparison, not hashed


# Opt-in (trust_version_counter=True): chunk ids of CPU tensors from the previous save, keyed by
# where the tensor lives, valid while its version counter is unchanged. In-place ops bump the
# counter; writes through ``.data``, numpy views or some collectives do not, hence opt-in.
_VersionKey = tuple[int, int, tuple[int, ...], tuple[int, ...], str]
_version_cache: dict[_VersionKey, tuple[int, list[str], Any]] = {}


def _version_key(t: torch.Tensor) -> _VersionKey | None:
    if t.device.type != "cpu" or not t.is_contiguous() or t.is_conj() or t.is_neg():
        return None
    storage = t.untyped_storage()
    offset = int(t.storage_offset())
    return (storage.data_ptr(), offset, tuple(t.shape), tuple(t.stride()), str(t.dtype))


def _chunks(view: memoryview, size: int) -> Iterator[memoryview]:
    if len(view) == 0:
        yield view
    for start in range(0, len(view), size):
        yield view[start : start + size]


def min_saving(compress: bool | None) -> float | None:
    """The saving a chunk's sample must show to be compressed (None: never), for
    ``save_checkpoint(compress=...)``: None (default) a third, True the store's 10%."""
    if compress is None:
        return SAVING_BY_DEFAULT
    if compress is True:
        return MIN_SAVING
    if compress is False:
        return None
    raise UsageError(
        f"compress must be None, True or False, got {compress!r}",
        hint="leave it out to compress only chunks zstd makes a third smaller",
    )


def _chunk_count(nbytes: int, chunk_size: int) -> int:
    return max(1, -(-nbytes // chunk_size))


def write_tensors(
    objects: ObjectStore,
    tensors: list[tuple[str, torch.Tensor]],
    *,
    chunk_size: int = CHUNK_SIZE,
    fault: Callable[[str], None] = lambda phase: None,
    trust_version_counter: bool = False,
    compress: bool | None = None,
    meanwhile: Callable[[list[TensorEntry], WriteStats], Callable[[], None] | None] | None = None,
) -> tuple[list[TensorEntry], WriteStats]:
    """Write every tensor's chunks as objects; entries in the order given. ``compress``: see
    ``min_saving``. ``meanwhile(entries, stats)`` runs once every chunk is durable and named,
    before their names are made durable, and what it returns while they are
    (``ChunkWriter.finish``): a manifest of them may be written then and fsynced, not named."""
    saving = min_saving(compress)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise UsageError(
            f"chunk_size must be a positive int (bytes), got {chunk_size!r}",
            hint="leave it out for the default of 64 MiB",
        )
    stats = WriteStats()
    jobs: list[tuple[int, int, memoryview]] = []
    nbytes: list[int] = []
    chunk_ids: list[list[str]] = [[] for _ in tensors]
    known: dict[int, list[str]] = {}
    for i, (_key, t) in enumerate(tensors):
        vkey = _version_key(t) if trust_version_counter else None
        hit = _version_cache.get(vkey) if vkey is not None else None
        if hit is not None and hit[0] == t._version and all(objects.touch(c) for c in hit[1]):
            known[i] = hit[1]
            nbytes.append(t.numel() * t.element_size())
            stats.bytes_skipped_hash += nbytes[-1]
            continue
        view = tensor_bytes(t)
        nbytes.append(len(view))
        jobs.extend((i, j, c) for j, c in enumerate(_chunks(view, chunk_size)))

    # New chunks are fsynced and named by the writer's own threads while the workers go on
    # comparing and hashing (write); nothing refers to them before ``finish`` returns.
    writer = ChunkWriter(objects, lambda: fault("object-write"))

    def store(job: tuple[int, int, memoryview]) -> tuple[str, Written | None, bool]:
        """(id, its write or None, reused?) of one chunk: equal to the last save's, else
        hashed, and written unless found stored."""
        i, j, data = job
        key = tensors[i][0]
        before = last_change(objects, key, j)  # None: not saved before in this process
        oid = reused(objects, key, j, data)
        if oid is not None:
            return oid, None, True
        changed = before is not None  # compared with the last save's bytes, and not equal

        def then(oid: str, written: bool) -> None:  # the object has its name now
            remember(objects, key, j, oid, data, written, changed, cached=before is not True)

        pays = saving is not None and compression_pays(data[:_SAMPLE], saving)
        # A chunk that changed at this save and at the one before goes around the page cache
        # (it will likely change again: caching it buys no faster comparison next time). Any
        # other goes through it, for the next save to compare with there: one saved for the
        # first time, or one that changed after a save that found it unchanged (the save
        # after replacing every tensor, whose next save compares the 90% left alone).
        oid, written = writer.put(data, pays, then, direct=before is True)
        if written is None:  # found stored: vouched for only after a comparison (which
            # reads every page of the mapping: none to fill first)
            remember(objects, key, j, oid, data, False, changed, cached=False)
        return oid, written, False

    # Chunks that will be written go first, so their disk writes overlap with comparing the rest.
    order = sorted(
        range(len(jobs)),
        key=lambda n: not likely_new(objects, tensors[jobs[n][0]][0], *jobs[n][1:]),
    )
    results: list[Any] = [None] * len(jobs)
    try:
        done = map_threads(store, [jobs[n] for n in order], _SAVE_WORKERS)
    except BaseException:
        writer.abort()
        raise
    writer.settle()  # every ``Written`` is known from here
    for n, result in zip(order, done, strict=True):
        results[n] = result
    for (i, _j, chunk), (oid, written, was_reused) in zip(jobs, results, strict=True):
        chunk_ids[i].append(oid)
        if written is not None and written.new:
            stats.bytes_new += len(chunk)
            stats.objects_new += 1
        if was_reused:
            stats.bytes_reused += len(chunk)
    for i, ids in known.items():
        chunk_ids[i] = ids
    stats.bytes_total = sum(nbytes)
    entries = [
        TensorEntry(
            key=key,
            dtype=str(t.dtype).removeprefix("torch."),  # type: ignore[arg-type]
            shape=list(t.shape),
            nbytes=nbytes[i],
            chunks=chunk_ids[i],
        )
        for i, (key, t) in enumerate(tensors)
    ]
    writer.finish(None if meanwhile is None else lambda: meanwhile(entries, stats))
    keep_only(
        objects,
        {
            (key, j)
            for i, (key, _t) in enumerate(tensors)
            for j in range(_chunk_count(nbytes[i], chunk_size))
        },
    )
    if trust_version_counter:
        _version_cache.clear()
        for i, (_key, t) in enumerate(tensors):
            vkey = _version_key(t)
            if vkey is not None:  # the storage ref keeps its address from being reused
                _version_cache[vkey] = (t._version, chunk_ids[i], t.untyped_storage())
    return entries, stats


def _read_into(
    objects: ObjectStore, oid: str, dest: memoryview, key: str, streamed: bool = True
) -> None:
    """Fill ``dest`` with the object's content and check its hash; errors name the tensor.

    ``streamed``: hash each piece as it arrives, on this thread; else read everything, then
    hash it with BLAKE3's own threads (for a load of fewer chunks than workers).
    """
    try:
        f = objects.open(oid)
    except MissingObjectError:
        raise MissingObjectError(
            oid,
            f"tensor {key}: object {oid} is missing from the store",
            hint="the checkpoint is incomplete; restore the object or load an older checkpoint",
        ) from None
    hasher = blake3.blake3()
    with f:
        try:
            got = 0
            while got < len(dest):
                n = f.readinto(dest[got : got + _READ_PIECE] if streamed else dest[got:])  # type: ignore[attr-defined]
                if not n:
                    break
                if streamed:
                    hasher.update(dest[got : got + n])
                got += n
            extra = f.read(1)
        except zstandard.ZstdError as e:
            raise CorruptObjectError(
                oid, f"tensor {key}: object {oid} does not decompress: {e}"
            ) from None
    if got != len(dest) or extra:
        raise CorruptObjectError(
            oid,
            f"tensor {key}: object {oid} holds {'more' if extra else got} bytes, "
            f"the manifest says {len(dest)}",
            hint="run `ledger verify`; load an older checkpoint",
        )
    actual = ALGO_PREFIX + hasher.hexdigest() if streamed else hash_bytes(dest)
    if actual != oid:
        raise CorruptObjectError(
            oid,
            f"tensor {key}: object {oid} is corrupt (its bytes hash to {actual[:19]}…)",
            hint="run `ledger verify`; restore the object or load an older checkpoint",
        )


def _check_entry(entry: TensorEntry, chunk_size: int) -> None:
    n = 1
    for d in entry.shape:
        n *= d
    itemsize = torch.empty((), dtype=torch_dtype(entry.dtype)).element_size()
    expected_chunks = _chunk_count(entry.nbytes, chunk_size)
    if n * itemsize != entry.nbytes or len(entry.chunks) != expected_chunks:
        raise CorruptObjectError(
            entry.chunks[0] if entry.chunks else "",
            f"tensor {entry.key}: manifest is inconsistent (shape {entry.shape}, {entry.dtype}, "
            f"{entry.nbytes} bytes in {len(entry.chunks)} chunks)",
        )


def read_tensors(
    objects: ObjectStore, entries: list[TensorEntry], chunk_size: int
) -> list[torch.Tensor]:
    """Allocate and fill every tensor, verifying each chunk's hash."""
    out: list[torch.Tensor] = []
    jobs: list[tuple[str, memoryview, str]] = []
    for e in entries:
        _check_entry(e, chunk_size)
        t = torch.empty(e.shape, dtype=torch_dtype(e.dtype))
        out.append(t)
        raw = t.reshape(-1).view(torch.uint8).numpy()
        view = raw.data.cast("B") if e.nbytes else None
        for j, oid in enumerate(e.chunks):
            part = view[j * chunk_size : (j + 1) * chunk_size] if view is not None else None
            jobs.append((oid, part if part is not None else memoryview(b""), e.key))
    streamed = len(jobs) >= _WORKERS
    map_threads(lambda job: _read_into(objects, *job, streamed=streamed), jobs)
    return out


# (entry, chunk size, start, end, dest, wanted): bytes [start, end) of a tensor into ``dest``
# (end - start bytes); ``wanted(a, b)`` says whether the tensor's bytes [a, b) hold any the
# caller uses (None: all of them do).
Range = tuple[TensorEntry, int, int, int, memoryview, Callable[[int, int], bool] | None]


def read_ranges(objects: ObjectStore, ranges: Sequence[Range]) -> None:
    """For each ``(entry, chunk_size, start, end, dest, wanted)``, fill ``dest`` with bytes
    ``[start, end)`` of the tensor ``entry``, reading only the chunks that hold them (and, with
    ``wanted``, only those holding a byte it wants); the chunks of every range are read by one
    pool of threads.

    An object is verified whole (its id is the hash of all its bytes), so a chunk is read
    whole and hashed before any of its bytes count: one inside the range is read straight
    into ``dest``, one the range cuts (at either end) into a buffer of its own, and its part
    copied into ``dest`` once its hash matched. On an error ``dest`` may hold bytes of chunks
    read so far: it is the caller's own buffer, to drop, not to show."""
    # (oid, where its bytes go, tensor key, chunk size, where the part starts in the chunk:
    # None for a chunk read straight into place)
    jobs: list[tuple[str, memoryview, str, int, int | None]] = []
    for entry, chunk_size, start, end, dest, wanted in ranges:
        _check_entry(entry, chunk_size)
        if not 0 <= start < end <= entry.nbytes or len(dest) != end - start:
            raise UsageError(
                f"tensor {entry.key}: bytes {start}..{end} are not in its {entry.nbytes}"
            )
        for j in range(start // chunk_size, (end - 1) // chunk_size + 1):
            lo, hi = j * chunk_size, min(entry.nbytes, (j + 1) * chunk_size)
            a, b = max(lo, start), min(hi, end)
            if wanted is not None and not wanted(a, b):
                continue
            whole = (a, b) == (lo, hi)
            jobs.append(
                (
                    entry.chunks[j],
                    dest[a - start : b - start],
                    entry.key,
                    hi - lo,
                    None if whole else a - lo,
                )
            )
    streamed = len(jobs) >= _WORKERS

    def read(job: tuple[str, memoryview, str, int, int | None]) -> None:
        oid, part, key, size, at = job
        if at is None:
            _read_into(objects, oid, part, key, streamed)
            return
        buf = memoryview(bytearray(size))
        _read_into(objects, oid, buf, key, streamed)
        part[:] = buf[at : at + len(part)]

    map_threads(read, jobs)
