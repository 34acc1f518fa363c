"""Edge cases of the chunk writer (checkpoint.write) that the save tests do not reach: its thread
pool's reuse and bounds, errors in a worker or a syncer (raised, nothing more named, nothing
left behind: no temp file, no descriptor, no slot), the folders fsynced per ``finish``, the
mode of an object, and a forked child. Written from the mutants of the fifth round.

A writer that hangs is a failure here, not a stuck run: waits are bounded (``_within``)."""

from __future__ import annotations

import errno
import os
import random
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import zstandard

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store.objects import MIN_COMPRESS, MIN_SAVING
from ledger.torch.checkpoint import write as ckpt_write
from ledger.torch.checkpoint.write import ChunkWriter, compression_pays

pytestmark = [pytest.mark.torch]  # with the other checkpoint tests; torch itself is not needed

ROOT = Path(__file__).resolve().parents[2]
_T = TypeVar("_T")
# Long enough for any wait that must end (a loaded 2-core machine), short enough for a hang.
_WAIT = 10.0
# How long a test watches for something that must not happen (a fifth syncer, a ninth thread).
_WATCH = 0.5


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


@pytest.fixture(params=["unnamed", "named"])
def temp_kind(request: Any, monkeypatch: Any) -> str:
    """Both kinds of temp file: O_TMPFILE (linked), and a named one (renamed)."""
    if request.param == "named":
        monkeypatch.setattr(ckpt_write, "open_unnamed", lambda dir, mode=0o444: None)
    return str(request.param)


def _within(fn: Callable[[], _T], seconds: float = _WAIT) -> _T:
    """``fn()`` on a daemon thread: its result or its error, and a failure if it hangs."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} did not return in {seconds} s"
    if errors:
        raise errors[0]
    return out[0]  # type: ignore[no-any-return]


def _until(cond: Callable[[], bool], seconds: float = _WAIT) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.002)


def _leftovers(st: Store) -> list[str]:
    return sorted(os.listdir(st.objects.tmp_dir))


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _blobs(n: int, seed: int, size: int = 3000) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(size) for _ in range(n)]


class _Gate:
    """A ``then`` hook that holds each syncer reaching it until ``open``; counts them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.release = threading.Event()

    def __call__(self, oid: str, new: bool) -> None:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            assert self.release.wait(_WAIT)
        finally:
            with self.lock:
                self.inside -= 1


# -- the process's pool of syncer threads ------------------------------------------------------


@pytest.fixture()
def new_pool(monkeypatch: Any) -> Iterator[Callable[[int], ckpt_write.Pool]]:
    """Pools of their own, whose threads are stopped afterwards (a pool's threads never end
    on their own, and other tests count the process pool's threads by name)."""
    before = set(threading.enumerate())
    pools: list[ckpt_write.Pool] = []

    def make(size: int) -> ckpt_write.Pool:
        pools.append(ckpt_write.Pool(size))
        return pools[-1]

    yield make
    hook = threading.excepthook

    def quiet(args: Any) -> None:
        if args.exc_type is not SystemExit:
            hook(args)

    def stop() -> None:
        raise SystemExit

    monkeypatch.setattr(threading, "excepthook", quiet)
    for pool in pools:
        for _ in range(pool._threads):
            pool.submit(stop)
    _until(
        lambda: not [t for t in set(threading.enumerate()) - before if t.name.startswith("ledger")]
    )


def _settled(pool: ckpt_write.Pool) -> None:
    """Wait until every started thread of ``pool`` waits for work, then a little longer (an
    idle count that overshoots would show by then)."""
    _until(lambda: pool._idle >= pool._threads)
    time.sleep(0.05)


def test_an_idle_pool_thread_takes_the_next_task_and_no_new_thread_starts(
    new_pool: Callable[[int], ckpt_write.Pool],
) -> None:
    """The first task starts the pool's threads, all of them; later tasks are taken by idle
    ones and start none."""
    pool = new_pool(4)
    ran: list[int] = []
    before = {t.ident for t in threading.enumerate()}
    for _ in range(3):
        done = threading.Event()
        pool.submit(lambda done=done: (ran.append(threading.get_ident()), done.set()))  # type: ignore[misc]
        assert done.wait(_WAIT)
        _settled(pool)
        # Every thread started waits, and each is counted idle once.
        assert (pool._threads, pool._idle) == (4, 4)
    started = {t.ident for t in threading.enumerate()} - before
    assert len(started) == 4 and set(ran) <= started


def test_tasks_that_wait_for_each_other_all_run(
    new_pool: Callable[[int], ckpt_write.Pool],
) -> None:
    """Tasks that wait for each other all run, up to the pool's size at once: an idle count
    that also counted busy threads would leave one queued behind them."""
    pool = new_pool(3)
    warm = threading.Event()
    pool.submit(warm.set)
    assert warm.wait(_WAIT)
    _settled(pool)
    barrier = threading.Barrier(3, timeout=_WAIT)
    started = [threading.Event() for _ in range(3)]
    passed: list[int] = []

    def task(i: int) -> None:
        started[i].set()
        try:
            barrier.wait()
            passed.append(i)
        except threading.BrokenBarrierError:
            pass

    try:
        for i in range(3):
            pool.submit(lambda i=i: task(i))  # type: ignore[misc]
            assert started[i].wait(_WAIT), f"task {i} never started"
        _until(lambda: len(passed) == 3)
    finally:
        barrier.abort()
    assert pool._threads == 3


def test_the_pool_starts_no_more_threads_than_its_size(
    new_pool: Callable[[int], ckpt_write.Pool],
) -> None:
    pool = new_pool(2)
    release = threading.Event()
    lock = threading.Lock()
    started: list[int] = []
    done: list[int] = []

    def task(i: int) -> None:
        with lock:
            started.append(i)
        assert release.wait(_WAIT)
        done.append(i)

    try:
        for i in range(3):
            pool.submit(lambda i=i: task(i))  # type: ignore[misc]
        _until(lambda: len(started) == 2)
        time.sleep(_WATCH)
        assert (len(started), pool._threads) == (2, 2)  # the third waits for a thread
    finally:
        release.set()
    _until(lambda: len(done) == 3)
    assert pool._threads == 2


def test_the_process_pool_runs_a_writers_syncers_and_more_at_once_and_no_more() -> None:
    """Twelve threads: a writer's eight syncers, and four more for the folder fsyncs of its
    ``finish`` or a second writer (a background save beside a foreground one) without
    waiting for the first; all daemons, so that an exiting interpreter does not wait for
    them (the saving thread waits for its own work)."""
    assert (ckpt_write._POOL, ckpt_write._SYNCERS) == (12, 8)
    pool = ckpt_write._pool()
    release = threading.Event()
    lock = threading.Lock()
    started: list[int] = []
    done: list[int] = []

    def task(i: int) -> None:
        with lock:
            started.append(i)
        assert release.wait(_WAIT)
        done.append(i)

    try:
        for i in range(13):
            pool.submit(lambda i=i: task(i))  # type: ignore[misc]
        _until(lambda: len(started) == 12)
        time.sleep(_WATCH)
        assert len(started) == 12
    finally:
        release.set()
    _until(lambda: len(done) == 13)
    assert pool._threads == 12
    assert all(t.daemon for t in threading.enumerate() if t.name == "ledger-ckpt-sync")


# -- one writer's bounds: syncers in flight, temp files pending ------------------------------


def test_a_writer_keeps_eight_objects_in_flight(store: Store) -> None:
    """Eight syncers, each writing, fsyncing and naming one object at a time."""
    gate = _Gate()
    writer = ChunkWriter(store.objects)
    try:
        puts = [writer.put(memoryview(d), False, gate) for d in _blobs(10, 1)]
        _until(lambda: gate.inside == 8)
        time.sleep(_WATCH)
        assert gate.most == 8  # a ninth syncer would have taken the ninth object by now
    finally:
        gate.release.set()
    _within(writer.finish)
    assert all(w is not None and w.new for _, w in puts)


def test_put_hands_a_raw_chunk_to_the_syncers_and_returns_before_it_is_written(
    store: Store, monkeypatch: Any
) -> None:
    """A save's workers go on comparing and hashing while the disk takes the chunks they
    found changed (issue #38): ``put`` of a raw payload returns before any of its bytes is
    written, even with more objects than syncers, and the writes happen on the syncers."""
    release = threading.Event()
    writers: list[str] = []
    real = ckpt_write._write_buffered

    def held(fd: int, compressed: bool, payload: Any) -> None:
        writers.append(threading.current_thread().name)
        assert release.wait(_WAIT)
        real(fd, compressed, payload)

    monkeypatch.setattr(ckpt_write, "_write_buffered", held)
    datas = _blobs(ckpt_write._SYNCERS + 3, 21)
    writer = ChunkWriter(store.objects)
    try:
        puts = _within(lambda: [writer.put(memoryview(d), False) for d in datas])
        _until(lambda: len(writers) == ckpt_write._SYNCERS)
        assert not any(store.objects.has(oid) for oid, _ in puts)
    finally:
        release.set()
    _within(writer.finish)
    assert set(writers) == {"ledger-ckpt-sync"}
    for (oid, w), d in zip(puts, datas, strict=True):
        assert w is not None and w.new and store.objects.get_bytes(oid) == d
    assert _leftovers(store) == []


def test_put_writes_a_compressed_chunk_itself(store: Store, monkeypatch: Any) -> None:
    """A compressed payload is bytes of its own (a raw one is a view of the caller's memory):
    written by the thread that compressed it before ``put`` returns, so queued jobs never
    hold more than one compressed chunk per calling thread."""
    writers: list[tuple[str, bool]] = []
    real = ckpt_write._write_buffered

    def spy(fd: int, compressed: bool, payload: Any) -> None:
        writers.append((threading.current_thread().name, compressed))
        real(fd, compressed, payload)

    monkeypatch.setattr(ckpt_write, "_write_buffered", spy)
    writer = ChunkWriter(store.objects)
    oid, _ = writer.put(memoryview(bytes(5000)), True)
    assert writers == [(threading.current_thread().name, True)]
    writer.finish()
    assert store.objects.get_bytes(oid) == bytes(5000)
    assert store.objects.path_of(oid).read_bytes()[:1] == b"\x01"


def test_at_most_sixteen_temp_files_wait_for_their_names(store: Store, temp_kind: str) -> None:
    """Each written temp file holds a descriptor until it is named: the seventeenth put
    waits for a name, and every slot comes back once the names are given."""
    gate = _Gate()
    writer = ChunkWriter(store.objects)
    datas = _blobs(20, 2)
    returned: list[tuple[str, Any]] = []

    def put_all() -> None:
        for d in datas:
            returned.append(writer.put(memoryview(d), False, gate))

    before = len(_fds())
    putter = threading.Thread(target=put_all, daemon=True)
    try:
        putter.start()
        _until(lambda: len(returned) == 16 and gate.inside == 8)
        time.sleep(_WATCH)
        assert len(returned) == 16
        assert len(_fds()) - before <= 16
    finally:
        gate.release.set()
    putter.join(_WAIT)
    assert not putter.is_alive()
    _within(writer.finish)
    for (oid, _), d in zip(returned, datas, strict=True):
        assert store.objects.get_bytes(oid) == d
    # The slots are back: a second round of more than sixteen does not wait.
    again = ChunkWriter(store.objects)
    _within(lambda: [again.put(memoryview(d), False) for d in _blobs(40, 3)])
    _within(again.finish)
    assert _leftovers(store) == []


# -- finish: every name, every folder, once ----------------------------------------------------


def test_finish_without_objects_returns(store: Store) -> None:
    writer = ChunkWriter(store.objects)
    _within(writer.finish)
    writer = ChunkWriter(store.objects)
    _within(writer.abort)


def test_finish_waits_until_every_object_is_named(store: Store, temp_kind: str) -> None:
    named: list[str] = []
    lock = threading.Lock()

    def slow(oid: str, new: bool) -> None:
        time.sleep(0.2)
        with lock:
            named.append(oid)

    writer = ChunkWriter(store.objects)
    oids = [writer.put(memoryview(d), False, slow)[0] for d in _blobs(6, 4)]
    _within(writer.finish)
    assert sorted(named) == sorted(oids)  # read at once: no later than finish's return
    assert all(store.objects.has(o) for o in oids)


def test_each_changed_folder_is_fsynced_once_before_finish_returns(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    """Exactly the folders that got an entry: the fan of each new object, and the folder
    holding each folder made; none twice, none above, and all before ``finish`` returns."""
    real = ckpt_write.fsync_dir
    synced: list[Path] = []
    lock = threading.Lock()

    def fsync_dir(d: Path) -> None:
        time.sleep(0.05)
        real(d)
        with lock:
            synced.append(Path(d))

    monkeypatch.setattr(ckpt_write, "fsync_dir", fsync_dir)
    root = store.objects.root
    existed = {p for p in [root, root / "b3"] if p.is_dir()}
    writer = ChunkWriter(store.objects)
    oids = [writer.put(memoryview(d), False)[0] for d in _blobs(5, 5)]
    _within(writer.finish)
    fans = {store.objects.path_of(o).parent for o in oids}
    made = ({root / "b3"} - existed) | fans
    expected = fans | {d.parent for d in made}
    assert sorted(synced) == sorted(expected)
    # A second save into one folder that exists: that folder only, once, however many
    # objects it got (and finish waits for a single fsync as well).
    fan = min(fans)
    old = [d for d in _blobs(3000, 6, 64) if store.objects.path_of(hash_bytes(d)).parent == fan]
    assert len(old) >= 2, "too few new blobs fall into a folder made above"
    synced.clear()
    writer = ChunkWriter(store.objects)
    for d in old[:4]:
        writer.put(memoryview(d), False)
    _within(writer.finish)
    assert synced == [fan]


def test_a_failed_folder_fsync_is_raised_by_finish(store: Store, monkeypatch: Any) -> None:
    """One folder's fsync fails (the others do not): its error is the one raised."""
    real = ckpt_write.fsync_dir
    failed: list[Path] = []
    lock = threading.Lock()

    def fsync_dir(d: Path) -> None:
        with lock:
            first = not failed
            if first:
                failed.append(d)
        if first:
            raise OSError(errno.EIO, "Input/output error", str(d))
        real(d)

    monkeypatch.setattr(ckpt_write, "fsync_dir", fsync_dir)
    writer = ChunkWriter(store.objects)
    for d in _blobs(4, 17):
        writer.put(memoryview(d), False)
    with pytest.raises(OSError, match="Input/output") as caught:
        _within(writer.finish)
    assert caught.value.filename == str(failed[0])


def test_the_named_hook_runs_once_per_object_this_writer_named(
    store: Store, temp_kind: str
) -> None:
    stored = store.objects.put_bytes(b"s" * 4000, compress=False)
    count: list[int] = []
    writer = ChunkWriter(store.objects, lambda: count.append(1))
    datas = _blobs(5, 7)
    puts = [writer.put(memoryview(d), False) for d in [*datas, datas[0], b"s" * 4000]]
    _within(writer.finish)
    assert puts[-1] == (stored, None)
    assert len(count) == 5 == sum(1 for _, w in puts if w is not None and w.new)


# -- errors: raised, nothing more named, nothing left behind -----------------------------------


def test_after_a_syncer_error_nothing_more_is_named(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_write, "_SYNCERS", 1)
    go = threading.Event()

    def fail(oid: str, new: bool) -> None:
        assert go.wait(_WAIT)
        raise OSError(errno.ENOSPC, "No space left on device")

    before = _fds()
    writer = ChunkWriter(store.objects)
    first, _ = writer.put(memoryview(b"f" * 3000), False, fail)
    rest = [writer.put(memoryview(d), False) for d in _blobs(4, 8)]
    go.set()
    with pytest.raises(OSError, match="No space"):
        _within(writer.finish)
    assert store.objects.has(first)  # named before its hook failed
    assert not any(store.objects.has(oid) for oid, _ in rest)
    assert all(w is not None and not w.new for _, w in rest)
    assert _leftovers(store) == []
    assert _fds() == before


def test_an_abort_waits_for_the_running_syncers(store: Store, temp_kind: str) -> None:
    """``abort`` returns once nothing more can be named: the caller raises right after, and
    objects dropped are not reported as stored."""
    gate = _Gate()
    n = ckpt_write._SYNCERS
    writer = ChunkWriter(store.objects)
    try:
        held = [writer.put(memoryview(d), False, gate) for d in _blobs(n, 9)]
        _until(lambda: gate.inside == n)
        dropped = [writer.put(memoryview(d), False) for d in _blobs(3, 10)]
        stopper = threading.Thread(target=writer.abort, daemon=True)
        stopper.start()
        _until(lambda: writer._aborted)
        time.sleep(_WATCH)
        assert stopper.is_alive()  # the held syncers are still running
    finally:
        gate.release.set()
    stopper.join(_WAIT)
    assert not stopper.is_alive()
    assert all(store.objects.has(oid) and w is not None and w.new for oid, w in held)
    assert not any(store.objects.has(oid) for oid, _ in dropped)
    assert all(w is not None and w.new is False for _, w in dropped)
    assert _leftovers(store) == []


def test_a_temp_file_that_cannot_be_made_is_raised_and_gives_its_slot_back(
    store: Store, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_write, "_PENDING", 2)

    def no_more(dir: Path, mode: int = 0o444) -> int | None:
        raise OSError(errno.EMFILE, "Too many open files")

    with monkeypatch.context() as m:
        m.setattr(ckpt_write, "open_unnamed", no_more)
        writer = ChunkWriter(store.objects)
        for d in _blobs(3, 11):
            with pytest.raises(OSError, match="Too many open files"):
                _within(lambda d=d: writer.put(memoryview(d), False))  # type: ignore[misc]
    oids = _within(lambda: [writer.put(memoryview(d), False)[0] for d in _blobs(3, 12)])
    _within(writer.finish)
    assert all(store.objects.has(o) for o in oids)
    assert _leftovers(store) == []


def test_a_named_temp_file_that_cannot_be_made_read_only_is_removed(
    store: Store, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_write, "open_unnamed", lambda dir, mode=0o444: None)
    monkeypatch.setattr(ckpt_write, "_PENDING", 1)
    before = _fds()
    writer = ChunkWriter(store.objects)
    with monkeypatch.context() as m:

        def fchmod(fd: int, mode: int) -> None:
            raise OSError(errno.EPERM, "Operation not permitted")

        m.setattr(os, "fchmod", fchmod)
        with pytest.raises(OSError, match="Operation not permitted"):
            writer.put(memoryview(b"m" * 3000), False)
    assert _fds() == before
    assert _leftovers(store) == []
    oid, _ = _within(lambda: writer.put(memoryview(b"m" * 3000), False))
    _within(writer.finish)
    assert store.objects.get_bytes(oid) == b"m" * 3000


def _full_after_the_codec_byte(m: Any) -> list[int]:
    """``os.write`` takes an object's codec byte, then fails as a full disk does; the
    descriptors of the calls made."""
    real = os.write
    calls: list[int] = []

    def write(fd: int, data: Any) -> int:
        calls.append(fd)
        if len(calls) > 1:  # the codec byte went in; the content does not fit
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    m.setattr(os, "write", write)
    return calls


def test_a_write_that_fails_midway_publishes_nothing_and_leaves_nothing(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_write, "_PENDING", 1)
    before = _fds()
    writer = ChunkWriter(store.objects)
    with monkeypatch.context() as m:
        calls = _full_after_the_codec_byte(m)
        # A syncer writes the object: ``put`` has queued it, ``finish`` raises the error.
        oid, _ = writer.put(memoryview(b"w" * 3000), False)
        with pytest.raises(OSError, match="No space"):
            _within(writer.finish)
    assert calls  # the write was tried, and failed
    assert oid == hash_bytes(memoryview(b"w" * 3000))
    assert not store.objects.has(oid)
    assert _fds() == before
    assert _leftovers(store) == []
    again = ChunkWriter(store.objects)  # the failed writer names nothing more (its error)
    other, _ = _within(lambda: again.put(memoryview(b"v" * 3000), False))
    _within(again.finish)
    assert store.objects.has(other) and not store.objects.has(oid)


def test_a_compressed_chunk_that_fails_to_write_is_raised_by_put_and_leaves_nothing(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    """The worker writes a compressed chunk itself (``put``): its error is raised there, its
    temp file and slot given back, and the writer goes on with the next chunk."""
    monkeypatch.setattr(ckpt_write, "_PENDING", 1)
    before = _fds()
    writer = ChunkWriter(store.objects)
    with monkeypatch.context() as m:
        calls = _full_after_the_codec_byte(m)
        with pytest.raises(OSError, match="No space"):
            writer.put(memoryview(bytes(5000)), True)
    assert len(calls) == 2
    assert not store.objects.has(hash_bytes(bytes(5000)))
    assert _fds() == before
    assert _leftovers(store) == []
    other, _ = _within(lambda: writer.put(memoryview(bytes(6000)), True))  # its slot is back
    _within(writer.finish)
    assert store.objects.get_bytes(other) == bytes(6000)


def test_an_error_removing_a_temp_file_is_raised_not_hung(store: Store, monkeypatch: Any) -> None:
    """A temp file that cannot be removed fails the save (the disk or the file system is
    failing), and is not left to end the syncer thread, which hung ``finish`` (it waited for
    a syncer that no longer ran) and kept the file's slot, so the next put waited forever."""
    monkeypatch.setattr(ckpt_write, "open_unnamed", lambda dir, mode=0o444: None)
    monkeypatch.setattr(ckpt_write, "_PENDING", 1)

    def fails(err: int, text: str) -> Callable[..., None]:
        def fn(*a: Any, **k: Any) -> None:
            raise OSError(err, text)

        return fn

    with monkeypatch.context() as m:
        # Gone read-only (ext4's errors=remount-ro): the link fails, then the removal.
        m.setattr(os, "link", fails(errno.EROFS, "Read-only file system"))
        m.setattr(os, "replace", fails(errno.EROFS, "Read-only file system"))
        m.setattr(Path, "unlink", fails(errno.EROFS, "Read-only file system"))
        writer = ChunkWriter(store.objects)
        _within(lambda: [writer.put(memoryview(d), False) for d in _blobs(3, 14)])
        with pytest.raises(OSError, match="Read-only"):
            _within(writer.finish)
    for name in _leftovers(store):  # what the read-only file system kept
        (store.objects.tmp_dir / name).unlink()
    with monkeypatch.context() as m:
        # Only the removal fails: named, and yet an error the save reports.
        m.setattr(Path, "unlink", fails(errno.EIO, "Input/output error"))
        writer = ChunkWriter(store.objects)
        oids = _within(lambda: [writer.put(memoryview(d), False)[0] for d in _blobs(3, 15)])
        with pytest.raises(OSError, match="Input/output"):
            _within(writer.finish)
    # The first was named before its removal failed; nothing is named after the error.
    assert [store.objects.has(o) for o in oids] == [True, False, False]
    for name in _leftovers(store):  # the two not named, which could not be removed either
        (store.objects.tmp_dir / name).unlink()
    # The pool still serves the next save.
    writer = ChunkWriter(store.objects)
    oids = [writer.put(memoryview(d), False)[0] for d in _blobs(8, 16)]
    _within(writer.finish)
    assert all(store.objects.has(o) for o in oids)
    assert _leftovers(store) == []


# -- what is stored ------------------------------------------------------------------------------


def test_objects_are_read_only_and_no_descriptor_stays_open(store: Store, temp_kind: str) -> None:
    stored = store.objects.put_bytes(b"s" * 4000, compress=False)
    before = _fds()
    writer = ChunkWriter(store.objects)
    datas = _blobs(20, 13)
    puts = [writer.put(memoryview(d), i % 2 == 0) for i, d in enumerate([*datas, *datas[:3]])]
    writer.put(memoryview(b"s" * 4000), False)
    _within(writer.finish)
    assert _fds() == before
    for oid, _ in puts:
        assert stat.S_IMODE(os.stat(store.objects.path_of(oid)).st_mode) == 0o444
    assert store.objects.has(stored)


def test_an_object_stored_meanwhile_is_touched_not_counted(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    """Another writer named the object between this writer's check and its name: it is
    reused like any object found stored, so its mtime is now (gc's grace period)."""
    monkeypatch.setattr(ckpt_write, "_SYNCERS", 1)
    gate = _Gate()
    writer = ChunkWriter(store.objects)
    try:
        writer.put(memoryview(b"h" * 3000), False, gate)
        _until(lambda: gate.inside == 1)
        oid, written = writer.put(memoryview(b"d" * 3000), False)
        assert store.objects.put_bytes(b"d" * 3000, compress=False) == oid
        past = time.time() - 86_400
        os.utime(store.objects.path_of(oid), (past, past))
    finally:
        gate.release.set()
    _within(writer.finish)
    assert written is not None and written.new is False
    assert os.stat(store.objects.path_of(oid)).st_mtime > past + 3600
    assert _leftovers(store) == []


def test_an_empty_chunk_is_stored(store: Store, temp_kind: str) -> None:
    writer = ChunkWriter(store.objects)
    oid, written = writer.put(memoryview(b""), False)
    _within(writer.finish)
    assert written is not None and written.new
    assert store.objects.get_bytes(oid) == b""


def _saving_exactly_ten_percent() -> bytes | None:
    """Bytes whose zstd form at ``LEVEL`` is exactly 90% of them, or None."""
    zstd = zstandard.ZstdCompressor(level=ckpt_write.LEVEL)
    for size in range(100, 3000, 10):
        target = size * (1 - MIN_SAVING)
        noise = random.Random(size).randbytes(size)
        for k in range(int(target) - 40, int(target) + 5):
            data = noise[:k] + bytes(size - k)
            if len(zstd.compress(data)) == target:
                return data
    return None


def test_compression_pays_at_its_bounds() -> None:
    """From ``MIN_COMPRESS`` bytes on, and at a saving of exactly ``MIN_SAVING``: the same
    bounds as the store's rule; and a bool, as typed."""
    assert compression_pays(memoryview(bytes(MIN_COMPRESS))) is True
    assert compression_pays(memoryview(bytes(MIN_COMPRESS - 1))) is False
    assert compression_pays(memoryview(random.Random(1).randbytes(4096))) is False
    edge = _saving_exactly_ten_percent()
    if edge is None:
        pytest.skip("this zstd gives no input a saving of exactly 10% at level 1")
    assert compression_pays(memoryview(edge)) is True


# -- a forked child ------------------------------------------------------------------------------


def test_a_child_forked_while_a_parent_thread_held_the_pool_lock_saves(store: Store) -> None:
    """The parent's lock, held by a thread that does not exist in the child, is not the
    child's: its first save makes its own pool."""
    ChunkWriter(store.objects).finish()
    ckpt_write._pool()
    r, w = os.pipe()
    with ckpt_write._pool.lock:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            status = 1
            try:
                done = threading.Event()

                def save() -> None:
                    writer = ChunkWriter(store.objects)
                    writer.put(memoryview(b"child" * 1000), False)
                    writer.finish()
                    done.set()

                threading.Thread(target=save, daemon=True).start()
                status = 0 if done.wait(_WAIT) else 2
                os.write(w, b"ok" if status == 0 else b"hung")
            finally:
                os._exit(status)
    os.close(w)
    _, code = os.waitpid(pid, 0)
    said = os.read(r, 10)
    os.close(r)
    assert (said, os.waitstatus_to_exitcode(code)) == (b"ok", 0)
    assert store.objects.get_bytes(hash_bytes(memoryview(b"child" * 1000)))


# -- last: a writer that hangs fails the tests above at their bounded waits, here at 60 s


def test_a_process_that_saved_exits_without_waiting_for_the_pool(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from ledger.store import Store\n"
        "from ledger.torch.checkpoint.write import ChunkWriter\n"
        "st = Store.init(sys.argv[1])\n"
        "w = ChunkWriter(st.objects)\n"
        "oid, _ = w.put(memoryview(b'z' * 5000), False)\n"
        "w.finish()\n"
        "print(st.objects.get_bytes(oid) == b'z' * 5000)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / ".ledger")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
