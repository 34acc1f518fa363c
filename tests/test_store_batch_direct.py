"""The batch writer's O_DIRECT path (``ledger.store.batch._write_object``): on a local
block-device file system, an object of a block or more has its whole 4 KiB blocks written
around the page cache and the rest through it. The object file must hold exactly the codec
byte and the payload at every size around the block boundaries, raw or compressed; O_DIRECT
must really be on for those (and off below a block, and where ``direct_io`` says no); a file
system that refuses it at the open or at the first write gets buffered writes, remembered
per folder; a short write finishes through the page cache; a failed write leaves no object,
no temp file and no descriptor. Also ``ObjectStore.touch_all``, which ``store_inputs`` uses
to skip stored inputs without a syscall per file in a new store."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest
import zstandard

from ledger._hashing import hash_bytes
from ledger.store import Store, batch, durable
from ledger.store.objects import ZSTD_LEVEL, header_for

O_DIRECT = getattr(os, "O_DIRECT", 0)
BLOCK = 4096

pytestmark = pytest.mark.skipif(not O_DIRECT, reason="no O_DIRECT on this platform")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setattr(durable, "_direct_ok", {})  # no refusal left by another test
    s = Store.init(tmp_path / ".ledger")
    if not durable.direct_io(s.objects.tmp_dir):
        pytest.skip("the temp folder's file system does not take O_DIRECT here")
    return s


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> dict[int, bool]:
    """For each object written (by its size in bytes), whether its temp file had O_DIRECT
    on when it was written."""
    flags: dict[int, bool] = {}
    real = batch._write_object

    def spy(fd: int, buf: object, total: int, direct: bool, tmp_dir: Path) -> None:
        flags[total] = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT)
        real(fd, buf, total, direct, tmp_dir)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_write_object", spy)
    return flags


def _write(root: Path, contents: dict[str, bytes]) -> list[str]:
    root.mkdir(exist_ok=True)
    for name, data in contents.items():
        (root / name).write_bytes(data)
    return [str(root / n) for n in contents]


def _object_file(store: Store, oid: str) -> bytes:
    return store.objects.path_of(oid).read_bytes()


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# Payload sizes around the block boundaries: the object is the header (one codec byte, or a
# whole block from 64 KiB on) and the payload, so a payload of BLOCK - 1 fills one block
# exactly.
SIZES = [1, BLOCK - 2, BLOCK - 1, BLOCK, 2 * BLOCK - 1, 2 * BLOCK, 40_000, 1 << 20]


def test_raw_objects_hold_exactly_the_header_and_the_payload(
    store: Store, tmp_path: Path, opened: dict[int, bool]
) -> None:
    contents = {f"{n}": os.urandom(n) for n in SIZES}
    oids = batch.put_files(store.objects, _write(tmp_path / "in", contents))
    # O_DIRECT on for every object of a whole block or more (header and n bytes), off below.
    total = {n: len(header_for(n, compressed=False)) + n for n in SIZES}
    assert opened == {total[n]: total[n] >= batch.DIRECT_MIN for n in SIZES}
    assert batch.DIRECT_MIN <= BLOCK
    for (name, data), oid in zip(contents.items(), oids, strict=True):
        assert oid == hash_bytes(data)
        assert _object_file(store, oid) == header_for(len(data), compressed=False) + data, name
        store.objects.verify(oid)
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_compressed_objects_go_the_same_way(
    store: Store, tmp_path: Path, opened: dict[int, bool]
) -> None:
    # Compressible files of many sizes: the zstd frames land in the buffer's object region
    # (over the bytes read), at sizes on both sides of a block.
    rng = __import__("random").Random(7)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(6)) for _ in range(50)]
    contents = {}
    for n in [5_000, 9_000, 40_000, 300_000, 1 << 20]:
        text = b" ".join(rng.choice(words) for _ in range(n // 6))
        contents[f"{n}"] = text[:n]
    oids = batch.put_files(store.objects, _write(tmp_path / "in", contents))
    zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    for (name, data), oid in zip(contents.items(), oids, strict=True):
        assert _object_file(store, oid) == b"\1" + zstd.compress(data), name
        assert store.objects.get_bytes(oid) == data
    sizes = [len(_object_file(store, o)) for o in oids]
    assert min(sizes) < BLOCK <= max(sizes)  # both sides of a block
    assert opened == {s: s >= batch.DIRECT_MIN for s in sizes}


def test_a_file_system_that_refuses_o_direct_at_the_open(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: dict[int, bool]
) -> None:
    real = durable.os.open
    refused: list[int] = []

    def no_direct(path: object, flags: int, mode: int = 0o777, **kw: object) -> int:
        if flags & O_DIRECT:
            refused.append(flags)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path, flags, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(durable.os, "open", no_direct)
    contents = {f"{i}": os.urandom(40_000 + i) for i in range(5)}
    oids = batch.put_files(store.objects, _write(tmp_path / "in", contents))
    assert len(refused) == 1  # once: the folder is remembered
    assert not durable.direct_io(store.objects.tmp_dir)
    assert opened == {40_001 + i: False for i in range(5)}  # unnamed, through the page cache
    for data, oid in zip(contents.values(), oids, strict=True):
        assert _object_file(store, oid) == b"\0" + data
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_a_refusal_at_the_first_write_writes_it_all_through_the_page_cache(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = batch.os.pwrite
    refusals: list[int] = []

    def picky(fd: int, data: memoryview, offset: int) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT:
            refusals.append(offset)  # an alignment this device does not take
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, offset)

    monkeypatch.setattr(batch.os, "pwrite", picky)
    monkeypatch.setattr(batch, "_WORKERS", 1)
    contents = {f"{i}": os.urandom(3 * BLOCK + i) for i in range(4)}
    oids = batch.put_files(store.objects, _write(tmp_path / "in", contents))
    assert refusals == [0]  # the first write; every later file opened without O_DIRECT
    assert not durable.direct_io(store.objects.tmp_dir)
    for data, oid in zip(contents.values(), oids, strict=True):
        assert _object_file(store, oid) == b"\0" + data


@pytest.mark.parametrize("short", [BLOCK, BLOCK + 100], ids=["on-a-block", "off-a-block"])
def test_a_short_direct_write_is_finished(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: int
) -> None:
    # A direct write may write less than asked. On a block boundary the rest goes on
    # around the page cache; off one (simulated: the first write done through the page
    # cache), the rest is written through it.
    real = batch.os.pwrite
    calls: list[tuple[bool, int, int]] = []

    def partial(fd: int, data: memoryview, offset: int) -> int:
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT)
        calls.append((direct, offset, len(data)))
        if direct and offset == 0 and len(data) > short:
            if short % BLOCK:
                fcntl.fcntl(fd, fcntl.F_SETFL, 0)
                n = real(fd, data[:short], 0)
                fcntl.fcntl(fd, fcntl.F_SETFL, O_DIRECT)
                return n
            return real(fd, data[:short], 0)
        return real(fd, data, offset)

    monkeypatch.setattr(batch.os, "pwrite", partial)
    data = os.urandom(5 * BLOCK + 123)
    [oid] = batch.put_files(store.objects, _write(tmp_path / "in", {"f": data}))
    assert _object_file(store, oid) == b"\0" + data
    head = (1 + len(data)) // BLOCK * BLOCK
    if short % BLOCK:
        assert calls == [(True, 0, head), (False, short, 1 + len(data) - short)]
    else:
        assert calls == [
            (True, 0, head),
            (True, short, head - short),
            (False, head, 1 + len(data) - head),
        ]
    assert durable.direct_io(store.objects.tmp_dir)  # not a refusal


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO, errno.EINVAL])
def test_a_direct_write_that_fails_leaves_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    # EINVAL counts as a refusal only at a file's first write; after a block is written
    # it is an error like any other.
    real = batch.os.pwrite

    def failing(fd: int, data: memoryview, offset: int) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT:
            if offset > 0:
                raise OSError(err, os.strerror(err))
            return real(fd, data[:BLOCK], 0)  # one block written, then the failure
        return real(fd, data, offset)

    monkeypatch.setattr(batch.os, "pwrite", failing)
    paths = _write(tmp_path / "in", {f"{i}": os.urandom(4 * BLOCK + i) for i in range(3)})
    before = _open_fds()
    with pytest.raises(OSError) as e:
        batch.put_files(store.objects, paths)
    assert e.value.errno == err
    assert _open_fds() == before
    assert [p for p in store.objects.root.rglob("*") if p.is_file()] == []
    assert list(store.objects.tmp_dir.iterdir()) == []
    assert durable.direct_io(store.objects.tmp_dir)


def test_direct_io_only_on_local_block_device_file_systems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "_direct_ok", {})
    libc = durable._c()
    assert libc is not None
    fs = durable._fs_type(tmp_path, libc)
    assert durable.direct_io(tmp_path) == (fs in {0xEF53, 0x58465342, 0x9123683E, 0xF2F52010})
    shm = Path("/dev/shm")
    if shm.is_dir() and durable._fs_type(shm, libc) == 0x01021994:  # tmpfs
        assert not durable.direct_io(shm)
        fd = durable.open_unnamed(shm, direct=True)
        if fd is not None:
            try:
                assert not fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT
            finally:
                os.close(fd)
    # A refusal is remembered for that folder only.
    durable.refuse_direct(tmp_path)
    assert not durable.direct_io(tmp_path)
    (tmp_path / "x").mkdir()
    assert durable.direct_io(tmp_path / "x") == (fs in {0xEF53, 0x58465342, 0x9123683E, 0xF2F52010})


@pytest.mark.parametrize("size", [100, 4 * BLOCK + 7])
def test_a_write_that_writes_nothing_is_an_error(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A write that returns 0 would loop for ever: it is an I/O error, through the page cache
    (a small file) and with O_DIRECT (a file of whole blocks) alike, and nothing is left."""
    monkeypatch.setattr(batch.os, "pwrite", lambda fd, data, offset: 0)
    before = _open_fds()
    with pytest.raises(OSError, match="write returned 0") as e:
        batch.put_files(store.objects, _write(tmp_path / "in", {"f": os.urandom(size)}))
    assert e.value.errno == errno.EIO
    assert _open_fds() == before and os.listdir(store.objects.tmp_dir) == []
