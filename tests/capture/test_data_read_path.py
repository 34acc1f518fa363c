"""How a cold digest reads a file: one open, fstat, read and close for a small file, into a
buffer each thread reuses; the digest is BLAKE3 of the file's bytes whatever the size, thread
count or a size that changes under the read; an error part-way leaves no tree memo."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import blake3
import pytest

from ledger._hashing import CHUNK
from ledger.capture import data, statcache
from ledger.capture.data import digest_input, manifest_data
from ledger.capture.statcache import StatCache
from ledger.errors import UsageError

SIZES = [0, 1, 4095, 4096, 4097, 40_001, (1 << 20) - 1, 1 << 20, (1 << 20) + 3, 3 << 20]


def _b3(b: bytes) -> str:
    return "b3:" + blake3.blake3(b).hexdigest()


@pytest.mark.parametrize("workers", [1, 8])
def test_every_size_digests_to_blake3_of_its_bytes(tmp_path: Path, workers: int) -> None:
    root = tmp_path / "data"
    root.mkdir()
    want = {}
    for i, size in enumerate(SIZES * 3):  # enough files for the pool to be used
        body = os.urandom(size)
        (root / f"{i:03d}-{size}.bin").write_bytes(body)
        want[f"{i:03d}-{size}.bin"] = _b3(body)
    d = digest_input(root, StatCache(), dvc=False, workers=workers)
    listing = manifest_data(d)
    assert listing is not None
    got = {e["path"]: e["digest"] for e in listing["entries"]}
    assert got == want
    assert {e["path"]: e["size"] for e in listing["entries"]} == {
        p: int(p.split("-")[1].split(".")[0]) for p in want
    }
    for size in SIZES:  # a file input takes the same path
        f = tmp_path / f"one-{size}"
        body = os.urandom(size)
        f.write_bytes(body)
        assert digest_input(f, StatCache(), dvc=False).digest == _b3(body)


def test_many_files_in_threads_equal_one_thread(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for i in range(600):
        (root / f"{i // 100}").mkdir(parents=True, exist_ok=True)
        (root / f"{i // 100}" / f"{i:04d}").write_bytes(os.urandom(i * 37 % 9000))
    wide = manifest_data(digest_input(root, StatCache(), dvc=False, workers=8))
    one = manifest_data(digest_input(root, StatCache(), dvc=False, workers=1))
    assert wide == one
    assert wide is not None
    for e in wide["entries"]:
        assert e["digest"] == _b3((root / e["path"]).read_bytes())


def test_a_small_file_is_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for i in range(20):
        (root / f"{i}").write_bytes(os.urandom(40_000 + i))
    (root / "empty").write_bytes(b"")
    reads = _reads_of(monkeypatch)
    digest_input(root, StatCache(), dvc=False, workers=1)
    assert sorted(reads) == sorted([0] + [40_000 + i for i in range(20)])


def test_large_files_each_first_in_a_fresh_reader_thread(tmp_path: Path) -> None:
    """Files over a chunk, read by two new pool threads whose first file is one of them:
    each thread makes its own read buffer for the chunked read."""
    root = tmp_path / "data"
    root.mkdir()
    want = {}
    for i in range(4):
        body = os.urandom(2 * CHUNK + 100 * i)
        (root / f"{i}.bin").write_bytes(body)
        want[f"{i}.bin"] = _b3(body)
    listing = manifest_data(digest_input(root, StatCache(), dvc=False, workers=2))
    assert listing is not None
    assert {e["path"]: e["digest"] for e in listing["entries"]} == want


def _reads_of(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte counts os.readv returns, in order, from now on."""
    reads: list[int] = []
    real = os.readv

    def spy(fd: int, buffers: list[memoryview]) -> int:
        n = real(fd, buffers)
        reads.append(n)
        return n

    monkeypatch.setattr(os, "readv", spy)
    return reads


@pytest.mark.parametrize("size", [CHUNK + 1, CHUNK + CHUNK // 2, 3 * CHUNK - 1])
def test_a_large_file_is_read_in_chunks_and_the_short_last_one_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A read that comes back short at the size fstat gave is the end: no read after it."""
    f = tmp_path / "big"
    body = os.urandom(size)
    f.write_bytes(body)
    reads = _reads_of(monkeypatch)
    assert digest_input(f, StatCache(), dvc=False).digest == _b3(body)
    assert reads == [CHUNK] * (size // CHUNK) + [size % CHUNK]


def test_a_file_of_whole_chunks_that_grew_under_the_read_is_hashed_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fstat said two chunks; the file grew before the read: a full read that reaches the
    size fstat gave is not the end, and the digest and listed size are of every byte."""
    root = tmp_path / "data"
    root.mkdir()
    f = root / "grows"
    body = os.urandom(2 * CHUNK)
    f.write_bytes(body)
    real = os.readv

    def append_first(fd: int, buffers: list[memoryview]) -> int:
        if f.stat().st_size == 2 * CHUNK:
            with open(f, "ab") as out:
                out.write(b"y" * 100)
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", append_first)
    cache = StatCache()
    listing = manifest_data(digest_input(root, cache, dvc=False, workers=1))
    assert listing is not None
    assert listing["entries"][0]["size"] == 2 * CHUNK + 100
    assert listing["entries"][0]["digest"] == _b3(body + b"y" * 100)
    assert cache.trees == {}


def test_a_file_that_shrank_under_the_read_keeps_the_stat_after_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Truncated between fstat and read: the listing's size is that of the bytes hashed."""
    root = tmp_path / "data"
    root.mkdir()
    f = root / "shrinks"
    f.write_bytes(b"x" * 100)
    real = os.readv

    def truncate_first(fd: int, buffers: list[memoryview]) -> int:
        if f.stat().st_size == 100:
            os.truncate(f, 40)
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", truncate_first)
    cache = StatCache()
    listing = manifest_data(digest_input(root, cache, dvc=False, workers=1))
    assert listing is not None
    assert (listing["entries"][0]["size"], listing["entries"][0]["digest"]) == (40, _b3(b"x" * 40))
    assert listing["n_bytes"] == 40
    assert cache.trees == {}


def test_a_file_that_shrank_after_the_walk_is_listed_as_read_and_keeps_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Truncated between the walk and the read (same inode, fewer bytes): the listing has the
    size read, and no tree memo is kept for a walk whose stats no longer hold."""
    root = tmp_path / "data"
    root.mkdir()
    for i in range(5):
        (root / f"{i}").write_bytes(b"z" * 1000)
    real = data._walk

    def walk_then_truncate(abspath: str, base: str) -> tuple[list[data.Item], bytes]:
        out = real(abspath, base)
        os.truncate(root / "3", 10)
        return out

    monkeypatch.setattr(data, "_walk", walk_then_truncate)
    cache = StatCache(racy_window_ns=0)
    d = digest_input(root, cache, dvc=False, workers=1)
    listing = manifest_data(d)
    assert listing is not None
    assert {e["path"]: e["size"] for e in listing["entries"]} == {
        "0": 1000, "1": 1000, "2": 1000, "3": 10, "4": 1000
    }  # fmt: skip
    assert d.n_bytes == 4010
    assert cache.trees == {}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_digesting_a_file_input_leaves_no_descriptor_open(tmp_path: Path) -> None:
    f = tmp_path / "one.bin"
    f.write_bytes(os.urandom(5000))
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(3):
        digest_input(f, StatCache(), dvc=False)
    assert set(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("told", [0, 10, 39_999, 40_001, 1 << 20])
def test_a_size_that_changed_under_the_read_still_reads_to_the_end(
    tmp_path: Path, told: int
) -> None:
    """``fstat`` said ``told`` bytes; the file has 40,000: the digest is of all 40,000."""
    f = tmp_path / "f"
    body = os.urandom(40_000)
    f.write_bytes(body)
    fd = os.open(f, os.O_RDONLY)
    try:
        assert data._read_digest(fd, told) == (_b3(body), 40_000)
    finally:
        os.close(fd)


def test_a_file_that_grew_keeps_the_stat_after_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file appended to between fstat and read: the digest covers what was read, and the
    stat returned (the listing's size) is the one taken after it, not the one before."""
    root = tmp_path / "data"
    root.mkdir()
    f = root / "grows"
    f.write_bytes(b"x" * 100)
    real = os.readv

    def append_first(fd: int, buffers: list[memoryview]) -> int:
        if f.stat().st_size == 100:
            with open(f, "ab") as out:
                out.write(b"y" * 50)
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", append_first)
    cache = StatCache()
    d = digest_input(root, cache, dvc=False, workers=1)
    listing = manifest_data(d)
    assert listing is not None
    assert listing["entries"][0]["size"] == 150
    assert listing["entries"][0]["digest"] == _b3(b"x" * 100 + b"y" * 50)
    assert cache.trees == {}  # the walk saw 100 bytes: no memo of a tree that moved


@pytest.mark.parametrize("workers", [1, 4])
def test_a_file_removed_after_the_walk_names_it_and_keeps_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for i in range(40):
        (root / f"{i:02d}").write_bytes(os.urandom(1000))
    real = data._walk

    def walk_then_remove(abspath: str, base: str) -> tuple[list[data.Item], bytes]:
        out = real(abspath, base)
        (root / "17").unlink()
        return out

    monkeypatch.setattr(data, "_walk", walk_then_remove)
    cache_file = tmp_path / "cache"
    cache = StatCache.load(cache_file)
    with pytest.raises(UsageError, match=r"input file .*/data/17 vanished"):
        digest_input(root, cache, dvc=False, workers=workers)
    assert cache.trees == {}
    cache.save()  # the files it did read are cached, each under its own stat
    again = StatCache.load(cache_file)
    assert again.trees == {}
    for i in range(40):
        p = root / f"{i:02d}"
        if p.exists() and (hit := again.lookup(str(p), os.stat(p))) is not None:
            assert hit == _b3(p.read_bytes())


@pytest.mark.parametrize("workers", [1, 4])
def test_a_read_error_part_way_names_the_file_and_keeps_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for i in range(40):
        (root / f"{i:02d}").write_bytes(os.urandom(1000 + i))
    bad = os.stat(root / "23").st_ino
    real = os.readv

    def eio(fd: int, buffers: list[memoryview]) -> int:
        if os.fstat(fd).st_ino == bad:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", eio)
    cache = StatCache()
    with pytest.raises(UsageError, match=r"cannot read input file .*/data/23: Input/output error"):
        digest_input(root, cache, dvc=False, workers=workers)
    assert cache.trees == {}
    assert str(root / "23") not in cache._entries


def test_saving_the_stat_cache_does_not_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is checked on load (trailer, stat keys): a wait on the disk buys nothing."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "a").write_bytes(b"a")
    cache = StatCache.load(tmp_path / "cache" / statcache.CACHE_NAME, racy_window_ns=0)
    digest_input(root, cache, dvc=False)
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(os, "fdatasync", lambda fd: synced.append(fd))
    cache.save()
    assert synced == []
    monkeypatch.undo()
    again = StatCache.load(tmp_path / "cache" / statcache.CACHE_NAME)
    assert again.lookup(str(root / "a"), os.stat(root / "a")) == _b3(b"a")
