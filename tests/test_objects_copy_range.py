"""``put_file``/``put_stream`` of a large regular file: the kernel copies it into the temp
file (``copy_file_range``) and each piece is hashed as read back from there. The object must
hold exactly the file's bytes and be named by their hash; a kernel or file system that
refuses the copy, a copy that stops early, a source that changes midway and an error midway
must each end in a correct object or in nothing at all."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store import objects as objects_module
from ledger.store.objects import PIPE_CHUNK, SAMPLE, header_for

pytestmark = pytest.mark.skipif(
    not hasattr(os, "copy_file_range"), reason="no copy_file_range on this platform"
)

SIZE = 2 * PIPE_CHUNK + 12_345  # three pieces after the first 1 MiB read, the last short
# Enough that a copy stopped after its first piece still has a whole piece left to copy.
LONG = SAMPLE + 2 * PIPE_CHUNK + 12_345


def _file(tmp_path: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    path = tmp_path / f"file-{size}.bin"
    path.write_bytes(data)
    return path, data


@pytest.fixture
def big(tmp_path: Path) -> tuple[Path, bytes]:
    return _file(tmp_path, SIZE)


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes each copy_file_range call copied."""
    calls: list[int] = []
    real = os.copy_file_range

    def spy(*args: int) -> int:
        n = real(*args)  # type: ignore[arg-type]
        calls.append(n)
        return n

    monkeypatch.setattr(objects_module.os, "copy_file_range", spy)
    return calls


def _leftovers(store: Store) -> list[str]:
    return os.listdir(store.objects.tmp_dir)


# The sizes: a short last piece; a last piece of one byte; exactly one piece left after the
# first read (the smallest file copied this way).
@pytest.mark.parametrize("size", [SIZE, SAMPLE + PIPE_CHUNK + 1, SAMPLE + PIPE_CHUNK])
def test_a_large_file_is_copied_by_the_kernel_and_named_by_what_was_stored(
    store: Store, tmp_path: Path, copies: list[int], size: int
) -> None:
    path, data = _file(tmp_path, size)
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data
    raw = store.objects.path_of(oid).read_bytes()
    # The raw header (zeros to 4096), then the bytes: no compression here.
    assert raw == header_for(len(data), compressed=False) + data
    assert sum(copies) == size - SAMPLE and copies[-1] == 0
    assert _leftovers(store) == []


def test_a_stream_not_at_its_start_is_stored_from_where_it_is(
    store: Store, big: tuple[Path, bytes], copies: list[int]
) -> None:
    path, data = big
    with open(path, "rb") as f:
        f.seek(1000)
        oid = store.objects.put_stream(f)
        assert f.tell() == SIZE  # where a read to the end would have left it
    assert oid == hash_bytes(data[1000:]) and store.objects.get_bytes(oid) == data[1000:]
    assert copies


@pytest.mark.parametrize("code", [errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL])
def test_a_refused_copy_is_read_and_written_instead(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def refuse(*args: int) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(objects_module.os, "copy_file_range", refuse)
    path, data = big
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data)
    assert store.objects.path_of(oid).read_bytes() == header_for(len(data), compressed=False) + data


def test_a_copy_that_stops_early_is_finished_by_reading(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that reports an end the file does not have (as /proc files do): the
    rest is read."""
    real = os.copy_file_range
    calls = []

    def one_piece_then_end(*args: int) -> int:
        calls.append(args)
        return real(*args) if len(calls) == 1 else 0  # type: ignore[arg-type]

    monkeypatch.setattr(objects_module.os, "copy_file_range", one_piece_then_end)
    path, data = _file(tmp_path, LONG)  # a whole piece left after the stop: read, not copied
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data) and store.objects.get_bytes(oid) == data
    assert len(calls) == 2  # the piece, then the end it reported; the rest was read


def test_a_source_that_changes_midway_is_named_by_what_was_stored(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process rewrites the file while it is copied: whatever mix the store got, its
    id is the hash of those bytes (``verify`` passes), never of bytes it does not hold."""
    real = os.copy_file_range
    path, data = big
    calls = []

    def rewrite_after_first(*args: int) -> int:
        n = real(*args)  # type: ignore[arg-type]
        calls.append(n)
        if len(calls) == 1:
            with open(path, "r+b") as f:
                f.write(b"\xff" * SIZE)  # all of it, the part copied and the rest
        return n

    monkeypatch.setattr(objects_module.os, "copy_file_range", rewrite_after_first)
    oid = store.objects.put_file(path)
    stored = store.objects.get_bytes(oid)
    assert oid == hash_bytes(stored)
    store.objects.verify(oid)
    assert stored != data and stored[-100:] == b"\xff" * 100  # a mix: the later pieces changed


def test_an_error_midway_leaves_nothing(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.copy_file_range
    calls = []

    def fail_second(*args: int) -> int:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(errno.EIO, "I/O error")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(objects_module.os, "copy_file_range", fail_second)
    path, data = big
    with pytest.raises(OSError, match="I/O error"):
        store.objects.put_file(path)
    assert not store.objects.has(hash_bytes(data))
    assert _leftovers(store) == []
    assert not any((store.objects.root / "b3").rglob("*"))  # no object of any id


def test_a_small_or_compressible_file_takes_the_other_paths(
    store: Store, tmp_path: Path, copies: list[int]
) -> None:
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(SAMPLE + PIPE_CHUNK - 1))  # a byte short of a piece left
    text = tmp_path / "text.txt"
    text.write_bytes(b"the same line again\n" * (SIZE // 20))  # zstd: compressed as it goes
    for p in (small, text):
        oid = store.objects.put_file(p)
        assert store.objects.get_bytes(oid) == p.read_bytes()
    assert copies == []
    assert store.objects.path_of(store.objects.put_file(text)).read_bytes()[:1] == b"\1"


def test_a_first_copy_that_fails_otherwise_is_an_error(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the errors that mean "not here" fall back; an I/O error is the caller's."""

    def broken(*args: int) -> int:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(objects_module.os, "copy_file_range", broken)
    with pytest.raises(OSError, match="I/O error"):
        store.objects.put_file(big[0])
    assert _leftovers(store) == []


def test_a_pipe_is_read_not_copied(store: Store, copies: list[int]) -> None:
    data = os.urandom(SIZE)
    r, w = os.pipe()

    def feed() -> None:
        with open(w, "wb") as f:
            f.write(data)

    import threading

    t = threading.Thread(target=feed)
    t.start()
    with open(r, "rb") as f:
        oid = store.objects.put_stream(f)
    t.join()
    assert oid == hash_bytes(data) and store.objects.get_bytes(oid) == data
    assert copies == []


def test_a_temp_file_open_for_writing_only_is_not_read_back(tmp_path: Path) -> None:
    """The copy hashes what it reads back from its output: an output it cannot read gets the
    bytes read and written instead."""
    path, data = _file(tmp_path, SIZE)
    out_path = tmp_path / "out"
    with open(path, "rb") as src, open(out_path, "wb") as out:
        first = src.read(SAMPLE)
        hasher = objects_module.new_hasher()
        objects_module._hash_and_write(src, first, hasher, out)
    assert out_path.read_bytes() == data
    assert "b3:" + hasher.hexdigest() == hash_bytes(data)


@pytest.mark.parametrize("which", ["first", "last"])
def test_a_read_back_that_fails_is_an_error(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """Hashing runs in its own thread: its error must reach the caller whichever piece it
    struck, and nothing is stored."""
    real = os.preadv
    reads = []
    pieces = -(-(SIZE - SAMPLE) // PIPE_CHUNK)

    def failing(fd: int, buffers: list[memoryview], offset: int) -> int:
        reads.append(offset)
        if (which == "first" and len(reads) == 1) or (which == "last" and len(reads) == pieces):
            return 0  # the temp file ends early (cut by someone else)
        return real(fd, buffers, offset)

    monkeypatch.setattr(objects_module.os, "preadv", failing)
    path, data = big
    with pytest.raises(OSError, match="read back short"):
        store.objects.put_file(path)
    assert not store.objects.has(hash_bytes(data)) and _leftovers(store) == []


def test_short_reads_back_are_continued(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.preadv

    def short(fd: int, buffers: list[memoryview], offset: int) -> int:
        return real(fd, [buffers[0][:100_000]], offset)

    monkeypatch.setattr(objects_module.os, "preadv", short)
    path, data = big
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data) and store.objects.get_bytes(oid) == data
