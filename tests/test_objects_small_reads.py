"""Small objects are read whole (``ObjectStore._read_small``): one read, and this thread's
zstd context instead of a new one per object. What it returns, and what it refuses, must be
what reading ``open``'s stream to its end gives, on real object files written byte by byte:
concatenated frames, a frame without its size, bytes after the last frame, a cut frame, an
empty file, an unknown codec byte, and files that are not regular."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest
import zstandard

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError, MissingObjectError
from ledger.store import Store
from ledger.store.objects import CODEC_RAW, CODEC_ZSTD, SMALL
from ledger.store.safe_read import NotRegularError, read_regular

_Z = zstandard.ZstdCompressor(level=3)


def _unsized(data: bytes) -> bytes:
    """A frame whose header has no content size, as ``put_stream`` writes them."""
    out = io.BytesIO()
    w = _Z.stream_writer(out, closefd=False)
    w.write(data)
    w.flush(zstandard.FLUSH_FRAME)
    return out.getvalue()


A, B = b"epoch 1 loss 0.25\n" * 300, b"epoch 2 loss 0.125\n" * 200
FILES = {
    "raw": bytes([CODEC_RAW]) + A,
    "zstd": bytes([CODEC_ZSTD]) + _Z.compress(A),
    "two frames": bytes([CODEC_ZSTD]) + _Z.compress(A) + _Z.compress(B),
    "unsized frame": bytes([CODEC_ZSTD]) + _unsized(A),
    "bytes after the frame": bytes([CODEC_ZSTD]) + _Z.compress(A) + b"\0\0junk",
    "cut frame": bytes([CODEC_ZSTD]) + _Z.compress(A)[:-5],
    "empty": b"",
    "codec byte only": bytes([CODEC_ZSTD]),
    "unknown codec": b"\x07" + A,
    "not zstd": bytes([CODEC_ZSTD]) + b"this is not a frame",
}


def _plant(store: Store, content: bytes, file: bytes) -> str:
    """An object file holding ``file`` at the name ``content`` hashes to."""
    oid = hash_bytes(content)
    path = store.objects.path_of(oid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(file)
    return oid


def _by_stream(store: Store, oid: str) -> bytes | str:
    """What reading ``open``'s stream to its end gives: the bytes, or the error's type."""
    try:
        with store.objects.open(oid) as f:
            return f.read()
    except (CorruptObjectError, zstandard.ZstdError) as e:
        return type(e).__name__


def _by_small(store: Store, oid: str) -> bytes | str:
    try:
        data = store.objects._read_small(oid)
    except (CorruptObjectError, zstandard.ZstdError) as e:
        return type(e).__name__
    assert data is not None
    return data


@pytest.mark.parametrize("kind", list(FILES))
def test_a_small_read_gives_what_the_stream_gives(store: Store, kind: str) -> None:
    oid = _plant(store, A, FILES[kind])
    assert _by_small(store, oid) == _by_stream(store, oid)


@pytest.mark.parametrize("kind", list(FILES))
def test_get_bytes_accepts_only_content_that_hashes_to_its_id(store: Store, kind: str) -> None:
    """Whatever the file holds, ``get_bytes`` returns the content the id names or refuses."""
    content = A + B if kind == "two frames" else A
    oid = _plant(store, content, FILES[kind])
    try:
        got = store.objects.get_bytes(oid)
    except CorruptObjectError:
        assert kind not in {"raw", "zstd", "two frames", "unsized frame"}
        return
    assert got == content
    assert kind in {"raw", "zstd", "two frames", "unsized frame"}


def test_missing_and_special_files_are_refused_as_before(store: Store, tmp_path: Path) -> None:
    oid = hash_bytes(b"gone")
    with pytest.raises(MissingObjectError):
        store.objects.get_bytes(oid)
    fifo_oid = hash_bytes(b"fifo")
    path = store.objects.path_of(fifo_oid)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)  # never waited on
    with pytest.raises(NotRegularError, match="FIFO"):
        store.objects.get_bytes(fifo_oid)
    link_oid = hash_bytes(b"link")
    target = tmp_path / "elsewhere"
    target.write_bytes(bytes([CODEC_RAW]) + b"link")
    link = store.objects.path_of(link_oid)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(NotRegularError, match="symbolic link"):
        store.objects.get_bytes(link_oid)


def test_one_decompression_context_a_thread(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading many small compressed records makes one zstd context per thread, not one per
    record (that set-up was most of what a record's read cost in ``reindex``)."""
    oids = [store.objects.put_bytes(b'{"kind": "run", "i": %d}' % i * 20) for i in range(40)]
    made = []
    real = zstandard.ZstdDecompressor

    def counted(*a: object, **k: object) -> zstandard.ZstdDecompressor:
        made.append(threading.get_ident())
        return real(*a, **k)

    monkeypatch.setattr(zstandard, "ZstdDecompressor", counted)
    got: dict[str, bytes] = {}
    together = threading.Barrier(3)  # all alive at once: no thread id is used twice

    def read_all() -> None:
        together.wait()
        for oid in oids:
            got[oid] = store.objects.get_bytes(oid)
        together.wait()

    threads = [threading.Thread(target=read_all) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(hash_bytes(v) == k for k, v in got.items()) and len(got) == 40
    assert len(made) == len(set(made)) <= 3  # at most one a thread, whatever was read


def test_a_large_object_is_read_as_a_stream(store: Store) -> None:
    """Past ``SMALL`` bytes on disk the object is not read whole first (a raw object would be
    in memory twice): it still comes back whole and verified."""
    data = os.urandom(SMALL + 10)
    oid = store.objects.put_bytes(data)
    assert store.objects._read_small(oid) is None
    assert store.objects.get_bytes(oid) == data


def test_read_regular_reads_past_the_size_the_open_saw() -> None:
    """A regular file whose size says 0 (``/proc``) is read to its end: the size is only
    where the first read stops."""
    text = read_regular("/proc/self/status", 1 << 20)
    assert os.stat("/proc/self/status").st_size == 0
    assert b"\nVmHWM:" in text and text.endswith(b"\n")
