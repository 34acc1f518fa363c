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
from ledger.store.objects import PIPE_CHUNK

pytestmark = pytest.mark.skipif(
    not hasattr(os, "copy_file_range"), reason="no copy_file_range on this platform"
)

SIZE = 2 * PIPE_CHUNK + 12_345  # three pieces after the first 1 MiB read, the last short


@pytest.fixture
def big(tmp_path: Path) -> tuple[Path, bytes]:
    data = os.urandom(SIZE)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path, data


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


def test_a_large_file_is_copied_by_the_kernel_and_named_by_what_was_stored(
    store: Store, big: tuple[Path, bytes], copies: list[int]
) -> None:
    path, data = big
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data
    raw = store.objects.path_of(oid).read_bytes()
    assert raw == b"\0" + data  # the raw codec byte, then the bytes: no compression here
    assert sum(copies) == SIZE - objects_module.SAMPLE and copies[-1] == 0
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
    assert store.objects.path_of(oid).read_bytes() == b"\0" + data


def test_a_copy_that_stops_early_is_finished_by_reading(
    store: Store, big: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that reports an end the file does not have (as /proc files do): the
    rest is read."""
    real = os.copy_file_range
    calls = []

    def one_piece_then_end(*args: int) -> int:
        calls.append(args)
        return real(*args) if len(calls) == 1 else 0  # type: ignore[arg-type]

    monkeypatch.setattr(objects_module.os, "copy_file_range", one_piece_then_end)
    path, data = big
    oid = store.objects.put_file(path)
    assert oid == hash_bytes(data) and store.objects.get_bytes(oid) == data


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
    small.write_bytes(os.urandom(PIPE_CHUNK))  # less than a piece left after the first read
    text = tmp_path / "text.txt"
    text.write_bytes(b"the same line again\n" * (SIZE // 20))  # zstd: compressed as it goes
    for p in (small, text):
        oid = store.objects.put_file(p)
        assert store.objects.get_bytes(oid) == p.read_bytes()
    assert copies == []
    assert store.objects.path_of(store.objects.put_file(text)).read_bytes()[:1] == b"\1"
