"""What writing a checkpoint's tensors promises (``ledger.torch.checkpoint.io``): the default chunk
size of the format spec, the codec judged on a chunk's first 64 KiB, the write statistics, the
worker threads, and ``trust_version_counter``: opt-in, never confusing two tensors that share a
storage, and keeping nothing of an earlier save alive.

Pinned because mutation testing (issue #18) found each of these untested.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import reuse as ckpt_reuse  # noqa: E402
from ledger.torch.checkpoint.io import map_threads, write_tensors  # noqa: E402

pytestmark = pytest.mark.torch

CODEC_RAW_ALIGNED, CODEC_ZSTD = 2, 1  # docs/format.md, "Object encoding"


def _codec(store: Store, oid: str) -> int:
    return store.objects.path_of(oid).read_bytes()[0]


def test_the_default_chunk_size_is_the_spec_s_64_mib(store: Store) -> None:
    save_checkpoint({"w": torch.arange(4.0)}, step=1, store=store, run_id="r")
    record = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    shard = store.get_json(record["shards"][0]["manifest"])
    assert shard["chunk_size"] == 64 * 1024 * 1024  # docs/format.md, "Tensor chunks"


def _bytes_tensor(data: Any) -> Any:
    return torch.from_numpy(data.copy())


def test_a_chunk_s_codec_is_judged_on_its_first_64_kib(store: Store) -> None:
    rng = np.random.default_rng(0)
    # 6250 zeros, then random bytes to 64 KiB: zstd saves under 10% of the first 64 KiB (raw),
    # though it would save more of any longer prefix (the zeros that follow).
    late = np.zeros(128 << 10, np.uint8)
    late[6250 : 64 << 10] = rng.integers(0, 256, (64 << 10) - 6250, dtype=np.uint8)
    # 64 KiB of zeros first, random bytes after: compressed.
    early = np.zeros(128 << 10, np.uint8)
    early[64 << 10 :] = rng.integers(0, 256, 64 << 10, dtype=np.uint8)
    entries, _ = write_tensors(
        store.objects, [("late", _bytes_tensor(late)), ("early", _bytes_tensor(early))]
    )
    assert _codec(store, entries[0].chunks[0]) == CODEC_RAW_ALIGNED  # raw, 128 KiB
    assert _codec(store, entries[1].chunks[0]) == CODEC_ZSTD
    for entry, data in zip(entries, (late, early), strict=True):
        assert store.objects.get_bytes(entry.chunks[0]) == data.tobytes()


def test_the_statistics_count_the_objects_and_bytes_written(store: Store) -> None:
    ckpt_reuse.forget()
    t = torch.randn(1000)  # 4000 bytes in chunks of 1024: three full, one of 928
    entries, first = write_tensors(store.objects, [("t", t)], chunk_size=1024)
    assert (first.objects_new, first.bytes_new, first.bytes_total) == (4, 4000, 4000)
    assert (first.bytes_skipped_hash, first.bytes_reused) == (0, 0)
    t[0] += 1.0  # the first chunk only
    again, second = write_tensors(store.objects, [("t", t)], chunk_size=1024)
    assert (second.objects_new, second.bytes_new, second.bytes_total) == (1, 1024, 4000)
    assert again[0].chunks[1:] == entries[0].chunks[1:]


def _peak_threads(workers: int | None, items: int, expected: int) -> tuple[int, list[int]]:
    """The most calls of ``map_threads`` that ran at once, and the results. Each call stays
    until ``expected`` run at once (a generous deadline: a loaded machine starts threads
    late), then half a second more for any worker beyond them to join in."""
    lock = threading.Condition()
    active = peak = 0

    def fn(x: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            lock.notify_all()
            lock.wait_for(lambda: peak >= expected, timeout=60)
            lock.wait_for(lambda: active > expected, timeout=0.5)
            active -= 1
        return x * x

    args = () if workers is None else (workers,)
    results = map_threads(fn, list(range(items)), *args)
    return peak, results


@pytest.mark.parametrize(("workers", "expected"), [(None, 4), (2, 2)])
def test_map_threads_runs_as_many_calls_at_once_as_it_has_workers(
    workers: int | None, expected: int
) -> None:
    peak, results = _peak_threads(workers, 6, expected)
    assert peak == expected
    assert results == [x * x for x in range(6)]


def test_map_threads_raises_the_first_error_and_stops_taking_work() -> None:
    done: list[int] = []

    def fn(x: int) -> int:
        if x == 0:
            raise ValueError("item 0")
        done.append(x)
        return x

    with pytest.raises(ValueError, match="item 0"):
        map_threads(fn, list(range(100)), 1)
    assert done == []  # one worker: nothing after the failing item was started


def test_a_default_write_hashes_a_tensor_changed_behind_its_version_counter(
    store: Store,
) -> None:
    ckpt_reuse.forget()
    t = torch.arange(16.0)
    write_tensors(store.objects, [("t", t)])
    t.data[0] = 100.0  # through .data: the version counter does not move
    entries, _ = write_tensors(store.objects, [("t", t)])
    assert entries[0].chunks == [hash_bytes(t.numpy().tobytes())]


def test_trusting_the_counter_skips_hashing_unchanged_tensors(store: Store) -> None:
    t = torch.randn(1000)
    write_tensors(store.objects, [("t", t)], trust_version_counter=True)
    _, stats = write_tensors(store.objects, [("t", t)], trust_version_counter=True)
    assert stats.bytes_skipped_hash == 4000 and stats.bytes_new == 0


def test_trusted_views_of_one_storage_keep_their_own_bytes(store: Store) -> None:
    z = torch.complex(torch.randn(100), torch.randn(100))
    # The conjugate view shares z's storage, offset, shape, strides, dtype and version
    # counter; only its conj bit tells it apart.
    state = {"z": z, "zc": z.conj()}
    opts: dict[str, Any] = {"store": store, "run_id": "r", "trust_version_counter": True}
    save_checkpoint(state, step=1, **opts)
    save_checkpoint(state, step=2, **opts)
    loaded = load_checkpoint(store=store, run_id="r").state
    assert torch.equal(loaded["z"], z)
    assert torch.equal(loaded["zc"], z.conj().resolve_conj())


def test_trusting_the_counter_keeps_no_tensor_of_an_earlier_save_alive(store: Store) -> None:
    first = np.ones(1000, np.float32)
    alive = weakref.ref(first)
    t = torch.from_numpy(first)  # the tensor's storage holds the array
    write_tensors(store.objects, [("t", t)], trust_version_counter=True)
    del t, first
    write_tensors(store.objects, [("u", torch.zeros(10))], trust_version_counter=True)
    gc.collect()
    assert alive() is None


def test_a_failed_write_names_none_of_the_chunks_still_queued(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk that fails stops the save: the chunks already queued for their fsync and name
    are dropped (``ChunkWriter.abort``), not named behind the caller's back once the error has
    reached it. The syncers are held in their first fsync until the writer is stopped after
    the failure (or, were it never stopped, until the error reached the caller), so that
    chunks wait in the queue behind them."""
    import os

    from ledger.torch.checkpoint import io as ckpt_io
    from ledger.torch.checkpoint import write as ckpt_write

    gate = threading.Event()
    real_fsync = os.fsync

    def held_fsync(fd: int) -> None:
        gate.wait(30)
        real_fsync(fd)

    judged = [0]
    lock = threading.Lock()
    real_pays = ckpt_io.compression_pays

    def pays(sample: Any, min_saving: float) -> bool:
        with lock:
            judged[0] += 1
            if judged[0] == ckpt_write._PENDING:  # every slot taken but its own
                raise RuntimeError("this chunk fails")
        return real_pays(sample, min_saving)

    real_stop = ckpt_write.ChunkWriter._stop

    def stop(writer: Any) -> None:  # abort has marked the writer aborted: let the syncers on
        gate.set()
        real_stop(writer)

    monkeypatch.setattr(os, "fsync", held_fsync)
    monkeypatch.setattr(ckpt_io, "compression_pays", pays)
    monkeypatch.setattr(ckpt_write.ChunkWriter, "_stop", stop)
    # Each syncer holds one chunk in its fsync; the rest of the slots wait in the queue.
    assert ckpt_write._PENDING > ckpt_write._SYNCERS
    t = torch.arange(float(1 << 16))  # 256 KiB: 64 chunks of 4 KiB, each its own object
    with pytest.raises(RuntimeError, match="this chunk fails"):
        write_tensors(store.objects, [("w", t)], chunk_size=4096)
    gate.set()

    def named() -> int:
        return sum(1 for p in (store.objects.root / "b3").rglob("*") if p.is_file())

    deadline = time.monotonic() + 3  # a syncer left running would name the rest by then
    while time.monotonic() < deadline and named() <= ckpt_write._SYNCERS:
        time.sleep(0.05)
    assert named() <= ckpt_write._SYNCERS  # only the chunks a syncer had begun with
    assert list(store.objects.tmp_dir.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_save_has_no_more_workers_than_the_cores_it_may_run_on() -> None:
    """A save's workers only compare, hash and compress: on one core (a container's share, a
    taskset), one worker, not four taking turns with the syncers that write."""
    import subprocess
    import sys

    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from ledger.torch.checkpoint import io; print(io._SAVE_WORKERS, io._WORKERS)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "4"]


def test_the_cores_of_a_process_whose_affinity_cannot_be_read(monkeypatch: Any) -> None:
    """Where the affinity cannot be read (another platform, a refused call), the machine's
    count, and 1 where even that is unknown."""
    from ledger.torch.checkpoint import io as ckpt_io

    def refused(pid: int) -> set[int]:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "sched_getaffinity", refused, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert ckpt_io._cores() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert ckpt_io._cores() == 1
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    assert ckpt_io._cores() == 5
