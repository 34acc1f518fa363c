"""Objects fetched by their ids (``ledger.store.incoming``): written as they are hashed, kept
only when their hash is their id, named only by ``commit``, after one durability barrier."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError
from ledger.store import Store, durable, incoming
from ledger.store.incoming import PIECE, Incoming, ObjectWriter
from ledger.store.objects import (
    ALIGN_MIN,
    CODEC_RAW,
    CODEC_RAW_ALIGNED,
    CODEC_ZSTD,
    PAGE,
    header_for,
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def _feed(writer: ObjectWriter, data: bytes, step: int) -> None:
    """Put ``data`` into ``writer`` as a network read would: ``step`` bytes at most a time."""
    at = 0
    while at < len(data):
        room = writer.room()
        n = min(len(room), step, len(data) - at)
        room[:n] = data[at : at + n]
        writer.wrote(n)
        at += n


def _fetch(store: Store, data: bytes, oid: str | None = None, step: int = 1 << 16) -> Incoming:
    box = Incoming(store.objects)
    writer = box.writer(oid or hash_bytes(data))
    _feed(writer, data, step)
    writer.finish()
    return box


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"x",
        os.urandom(PIECE - PAGE),  # the first piece exactly (its first page is the header's)
        os.urandom(ALIGN_MIN - 1),  # the largest content with a one-byte header
        os.urandom(ALIGN_MIN),  # the smallest one from offset 4096
        os.urandom(2 * PIECE + 4097),  # whole pieces, then a tail that is not whole blocks
        b"0123456789abcdef" * (PIECE // 8),  # compressible: zstd, over two pieces
    ],
    ids=["empty", "one-byte", "one-piece", "below-align", "align", "pieces-and-tail", "zstd"],
)
def test_what_is_committed_reads_back_as_it_was_fetched(store: Store, data: bytes) -> None:
    oid = hash_bytes(data)
    with _fetch(store, data, step=300_000) as box:
        assert not store.objects.has(oid)  # staged: no name before the barrier
        box.commit()
    assert store.objects.get_bytes(oid) == data
    store.objects.verify(oid)
    # The layout every writer gives the same content (objects.header_for).
    zstd = len(set(data)) == 16
    raw = store.objects.path_of(oid).read_bytes()
    head = header_for(len(data), compressed=zstd)
    assert raw[: len(head)] == head
    big = len(data) >= ALIGN_MIN
    assert raw[0] == (CODEC_ZSTD if zstd else CODEC_RAW_ALIGNED if big else CODEC_RAW)
    assert os.listdir(store.tmp_dir) == []


def test_content_that_does_not_hash_to_its_id_is_never_stored(store: Store) -> None:
    data = os.urandom(PIECE + 10)
    wrong = hash_bytes(data + b"!")
    box = Incoming(store.objects)
    writer = box.writer(wrong)
    _feed(writer, data, 1 << 20)
    with pytest.raises(CorruptObjectError, match="hashes to"):
        writer.finish()
    box.commit()
    assert not store.objects.has(wrong) and list(store.objects) == []
    assert os.listdir(store.tmp_dir) == []


def test_what_is_not_committed_is_dropped(store: Store) -> None:
    data = os.urandom(5000)
    with _fetch(store, data):
        pass
    assert not store.objects.has(hash_bytes(data)) and os.listdir(store.tmp_dir) == []


def test_a_record_s_content_comes_back_for_its_links_and_a_blob_s_does_not(store: Store) -> None:
    record = b'{"kind": "run", "schema": 1}'
    box = Incoming(store.objects)
    # The blob's first byte is not ``{``: random bytes starting with one may be a record and
    # are kept (``Fetched``), 1 time in 256 (a fresh machine's run drew one, 7 December).
    blob = b"\x00" + os.urandom(99)
    for data, kept in ((record, record), (blob, None)):
        writer = box.writer(hash_bytes(data))
        _feed(writer, data, 7)
        got = writer.finish()
        assert (got.size, got.content, got.later) == (len(data), kept, False)
    box.discard()


def test_a_record_too_large_to_keep_is_read_once_named(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(incoming, "MAX_RECORD", 10)
    data = b'{"kind": "run", "schema": 1}'
    box = Incoming(store.objects)
    writer = box.writer(hash_bytes(data))
    _feed(writer, data, 4)
    got = writer.finish()
    assert got.content is None and got.later
    box.discard()


def test_every_object_is_made_durable_by_one_barrier_before_any_is_named(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fsync per object: one ``sync_files`` over all the staged files, then the names, then
    one pass over their folders. The order a crash needs: no name before durable content."""
    events: list[tuple[str, object]] = []
    inside: list[bool] = []

    def step(name: str, fn: Any) -> Any:
        def wrapped(first: Any, *a: Any) -> Any:
            events.append((name, len(first) if name == "barrier" else None))
            inside.append(True)
            try:
                return fn(first, *a)
            finally:
                inside.pop()

        return wrapped

    def link(fd: int, path: str) -> bool:
        events.append(("name", path))
        return durable.link_unnamed(fd, path)

    def syncing(fn: Any) -> Any:
        def wrapped(fd: int) -> None:
            if not inside:
                events.append(("fsync", fd))
            fn(fd)

        return wrapped

    monkeypatch.setattr(incoming, "sync_files", step("barrier", durable.sync_files))
    monkeypatch.setattr(incoming, "sync_dirs", step("folders", durable.sync_dirs))
    monkeypatch.setattr(incoming, "link_unnamed", link)
    monkeypatch.setattr(os, "fsync", syncing(os.fsync))
    monkeypatch.setattr(os, "fdatasync", syncing(os.fdatasync))
    blobs = [os.urandom(9000 + i) for i in range(20)]
    box = Incoming(store.objects)
    for data in blobs:
        writer = box.writer(hash_bytes(data))
        _feed(writer, data, 4096)
        writer.finish()
    assert events == []  # staged: nothing durable, nothing named
    box.commit()
    assert events[0] == ("barrier", 20)
    assert [e[0] for e in events[1:]] == ["name"] * 20 + ["folders"]
    assert all(store.objects.get_bytes(hash_bytes(d)) == d for d in blobs)


def test_an_object_stored_meanwhile_is_touched_not_replaced(store: Store) -> None:
    data = os.urandom(6000)
    box = _fetch(store, data)
    oid = store.objects.put_bytes(data)  # another writer names it first
    before = store.objects.path_of(oid).stat().st_ino
    box.commit()
    assert store.objects.path_of(oid).stat().st_ino == before
    assert store.objects.get_bytes(oid) == data
