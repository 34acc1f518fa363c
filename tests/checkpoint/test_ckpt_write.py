"""A save's new chunks (``checkpoint.write``): fsynced before they get their names, every changed
directory fsynced once, nothing left behind by an abort, and the same object written twice
counted once."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard

from ledger.store import Store
from ledger.torch.checkpoint import write as ckpt_write
from ledger.torch.checkpoint.write import ChunkWriter

pytestmark = [pytest.mark.torch]  # with the other checkpoint tests; torch itself is not needed


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


@pytest.fixture(params=["unnamed", "named"])
def temp_kind(request: Any, monkeypatch: Any) -> str:
    """Both kinds of temp file: O_TMPFILE (linked), and a named one (renamed)."""
    if request.param == "named":
        monkeypatch.setattr(ckpt_write, "open_unnamed", lambda dir, mode=0o444: None)
    return str(request.param)


def _leftovers(st: Store) -> list[str]:
    return sorted(os.listdir(st.objects.tmp_dir))


def test_objects_are_durable_before_named_and_their_folders_after(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    events: list[tuple[str, Any]] = []
    real_fsync, real_dir = os.fsync, ckpt_write.fsync_dir
    real_link, real_named = ckpt_write.link_unnamed, ckpt_write.link_named

    def fsync(fd: int) -> None:
        real_fsync(fd)
        events.append(("fsync", os.fstat(fd).st_ino))

    def link_unnamed(fd: int, path: Path) -> bool:
        events.append(("name", os.fstat(fd).st_ino))
        return real_link(fd, path)

    def link_named(src: Path, dst: Path) -> bool:
        events.append(("name", os.stat(src).st_ino))
        return real_named(src, dst)

    def fsync_dir(d: Path) -> None:
        real_dir(d)
        events.append(("dir", d))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(ckpt_write, "link_named", link_named)
    monkeypatch.setattr(ckpt_write, "link_unnamed", link_unnamed)
    monkeypatch.setattr(ckpt_write, "fsync_dir", fsync_dir)
    named: list[tuple[str, bool]] = []

    def then(oid: str, new: bool) -> None:
        assert store.objects.has(oid)
        named.append((oid, new))

    writer = ChunkWriter(store.objects)
    datas = [bytes([i]) * (1000 + i) for i in range(6)]
    puts = [writer.put(memoryview(d), False, then) for d in datas]
    writer.finish()
    monkeypatch.undo()
    oids = [oid for oid, _ in puts]
    assert all(w is not None and w.new for _, w in puts)
    assert sorted(named) == sorted((oid, True) for oid in oids)
    for oid, d in zip(oids, datas, strict=True):
        assert store.objects.get_bytes(oid) == d
        ino = os.stat(store.objects.path_of(oid)).st_ino
        # Its content was fsynced before it got its name, and the name came once.
        assert [e for e in events if e[1] == ino] == [("fsync", ino), ("name", ino)], oid
    dirs = [e[1] for e in events if e[0] == "dir"]
    fans = {store.objects.path_of(oid).parent for oid in oids}
    assert fans <= set(dirs)
    assert len(dirs) == len(set(dirs))  # each folder once
    # The fan folders are new in a new ledger: the folder holding them is fsynced too.
    assert store.objects.root / "b3" in dirs
    last_name = max(i for i, e in enumerate(events) if e[0] == "name")
    assert last_name < min(i for i, e in enumerate(events) if e[0] == "dir")
    assert _leftovers(store) == []


def test_an_object_written_twice_or_already_stored_counts_once(
    store: Store, temp_kind: str
) -> None:
    stored = store.objects.put_bytes(b"x" * 5000, compress=False)
    writer = ChunkWriter(store.objects)
    calls: list[bool] = []
    again = writer.put(memoryview(b"x" * 5000), False, lambda o, n: calls.append(n))
    first = writer.put(memoryview(b"y" * 5000), False, lambda o, n: calls.append(n))
    second = writer.put(memoryview(b"y" * 5000), False, lambda o, n: calls.append(n))
    writer.finish()
    assert again == (stored, None)  # found stored: nothing written, nothing queued
    assert first[0] == second[0]
    # The second put is written too, unless a syncer already named the first by then (then it
    # is found stored, as `again` was): either way exactly one write is new, and the hook runs
    # once per write.
    assert first[1] is not None
    written = [w for w in (first[1], second[1]) if w is not None]
    assert sorted(w.new for w in written) == ([False, True] if len(written) == 2 else [True])
    assert sorted(calls) == sorted(w.new for w in written)
    assert store.objects.get_bytes(first[0]) == b"y" * 5000
    assert _leftovers(store) == []


def test_compressed_objects_hold_a_zstd_frame(store: Store, temp_kind: str) -> None:
    writer = ChunkWriter(store.objects)
    oid, _ = writer.put(memoryview(bytes(100_000)), True)
    writer.finish()
    with open(store.objects.path_of(oid), "rb") as f:
        assert f.read(1) == b"\x01"
    assert os.path.getsize(store.objects.path_of(oid)) < 10_000
    assert store.objects.get_bytes(oid) == bytes(100_000)


def test_an_abort_names_nothing_more_and_leaves_no_temp_file(
    store: Store, temp_kind: str, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_write, "_SYNCERS", 1)
    started, release = threading.Event(), threading.Event()

    def hold(oid: str, new: bool) -> None:  # the only syncer waits here, the second job queued
        started.set()
        assert release.wait(30)

    writer = ChunkWriter(store.objects)
    first, _ = writer.put(memoryview(b"a" * 3000), False, hold)
    assert started.wait(30)
    second, _ = writer.put(memoryview(b"c" * 3000), False)
    stopper = threading.Thread(target=writer.abort)
    stopper.start()
    deadline = time.monotonic() + 30
    while not writer._aborted:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    release.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert store.objects.has(first)  # named before the abort
    assert not store.objects.has(second)
    assert _leftovers(store) == []


def test_a_failure_after_naming_is_raised_by_finish(store: Store, temp_kind: str) -> None:
    def boom(oid: str, new: bool) -> None:
        raise OSError(28, "No space left on device")

    writer = ChunkWriter(store.objects)
    writer.put(memoryview(b"b" * 3000), False, boom)
    with pytest.raises(OSError, match="No space"):
        writer.finish()
    assert _leftovers(store) == []


def test_chunks_are_compressed_at_the_chunk_level_when_it_pays(store: Store) -> None:
    # Float-like content whose top bytes repeat: zstd saves well over 10% at level 1.
    rng = random.Random(3)
    data = bytes(
        b for _ in range(20_000) for b in (rng.randrange(256), rng.randrange(256), 0x80, 0x40)
    )
    assert ckpt_write.compression_pays(memoryview(data)[: 64 << 10])
    assert not ckpt_write.compression_pays(memoryview(rng.randbytes(64 << 10)))
    assert not ckpt_write.compression_pays(memoryview(bytes(ckpt_write.MIN_COMPRESS - 1)))
    writer = ChunkWriter(store.objects)
    oid, _ = writer.put(memoryview(data), True)
    writer.finish()
    with open(store.objects.path_of(oid), "rb") as f:
        assert f.read(1) == b"\x01"
        frame = f.read()
    assert frame == zstandard.ZstdCompressor(level=ckpt_write.LEVEL).compress(data)
    assert ckpt_write.LEVEL == 1


def _sync_threads() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate() if t.name == "ledger-ckpt-sync"}


def _write_some(st: Store, seed: int) -> list[str]:
    writer = ChunkWriter(st.objects)
    rng = random.Random(seed)
    oids = [writer.put(memoryview(rng.randbytes(5000)), False)[0] for _ in range(12)]
    writer.finish()
    return oids


def test_later_saves_reuse_the_sync_threads(store: Store) -> None:
    """The syncer threads outlive a writer: the next save starts none (each start cost page
    faults and time on every save), and never more than the pool's size."""
    _write_some(store, 1)
    first = _sync_threads()
    assert 0 < len(first) <= ckpt_write._POOL
    for seed in range(2, 7):
        oids = _write_some(store, seed)
        assert all(store.objects.get_bytes(o) for o in oids)
    assert _sync_threads() == first
    assert _leftovers(store) == []


def test_a_forked_child_saves_with_a_pool_of_its_own(store: Store) -> None:
    """A child forked after the parent's saves (a crash test's saver, a DataLoader worker)
    has none of the parent's threads: its writes must not wait for them."""
    _write_some(store, 1)
    assert _sync_threads()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            done = threading.Event()
            threading.Thread(target=lambda: (_write_some(store, 99), done.set())).start()
            status = 0 if done.wait(30) else 2
            os.write(w, b"ok" if status == 0 else b"hung")
        finally:
            os._exit(status)
    os.close(w)
    _, code = os.waitpid(pid, 0)
    said = os.read(r, 10)
    os.close(r)
    assert (said, os.waitstatus_to_exitcode(code)) == (b"ok", 0)
    assert all(store.objects.get_bytes(o) for o in _write_some(store, 99))


def test_a_staged_object_is_durable_before_its_name_appears(store: Store, temp_kind: str) -> None:
    """``StagedObject``: the content is fsynced at once, the name only comes with ``name``
    (a manifest staged while the objects it links to are named); the id and the stored
    bytes are ``put_bytes``'s; nothing is left behind either way."""
    data = b'{"kind":"checkpoint-shard","pad":"' + b"x" * 5000 + b'"}'
    staged = ckpt_write.StagedObject(store.objects, data)
    assert not store.objects.has(staged.oid)
    assert staged.name() is True
    assert store.objects.get_bytes(staged.oid) == data
    assert staged.oid == store.objects.put_bytes(data)
    assert _leftovers(store) == []
    # Stored already: nothing is written, and naming it says so.
    again = ckpt_write.StagedObject(store.objects, data)
    assert again.name() is False
    dropped = ckpt_write.StagedObject(store.objects, b"never named")
    dropped.discard()
    assert not store.objects.has(dropped.oid)
    assert _leftovers(store) == []


def test_the_manifest_and_record_are_made_durable_while_the_chunk_names_are(
    store: Store, monkeypatch: Any
) -> None:
    """A save's shard manifest links to its chunks, and its checkpoint record to the manifest:
    each name appears only once what it links to is durable under its name, but their
    content is fsynced meanwhile, not after (two fsyncs fewer in a row on every save of one
    process). The chunks' folders wait here until both contents are durable: on the old
    code, which wrote the manifest and the record after them, they would wait in vain."""
    torch = pytest.importorskip("torch")
    import stat

    from ledger.torch.checkpoint import save_checkpoint

    staged = {
        b'"kind":"checkpoint-shard"': threading.Event(),
        b'"kind":"checkpoint"': threading.Event(),
    }
    seen: list[tuple[bool, bool]] = []  # per chunk folder: (both contents durable, any named)
    real = os.fsync
    # The chunks' folders are those fsynced while the writer finishes (the same threads
    # fsync a new fan folder of the manifest or record later, once it is named).
    finishing = threading.Event()
    finish = ChunkWriter.finish

    def spy_finish(self: ChunkWriter, *a: Any, **k: Any) -> None:
        finishing.set()
        try:
            finish(self, *a, **k)
        finally:
            finishing.clear()

    monkeypatch.setattr(ChunkWriter, "finish", spy_finish)

    def body(raw: bytes) -> bytes:
        if raw[:1] == b"\x01":
            return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(raw[1:]))
        return raw[1:]

    def fsync(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        chunk_folder = finishing.is_set() and threading.current_thread().name == "ledger-ckpt-sync"
        if stat.S_ISDIR(mode) and chunk_folder:
            durable = all(e.wait(timeout=30) for e in staged.values())  # generous deadline
            named = any(
                kind in store.objects.get_bytes(o)
                for o in store.objects
                if store.objects.size_on_disk(o) < 1 << 16
                for kind in staged
            )
            seen.append((durable, named))
        real(fd)
        if stat.S_ISREG(mode) and os.readlink(f"/proc/self/fd/{fd}").startswith(str(store.tmp_dir)):
            with open(f"/proc/self/fd/{fd}", "rb") as f:
                content = body(f.read())
            for kind, event in staged.items():
                if kind in content:
                    event.set()

    monkeypatch.setattr(os, "fsync", fsync)
    g = torch.Generator().manual_seed(0)
    state = {"a": torch.randn(1 << 15, generator=g), "b": torch.randn(1 << 15, generator=g)}
    info = save_checkpoint(state, step=1, store=store, run_id="r")
    assert seen and all(durable and not named for durable, named in seen), seen
    assert info.bytes_new == 2 * (1 << 17)
    assert _leftovers(store) == []
