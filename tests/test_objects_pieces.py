"""``put_stream``'s raw copy in pieces: every piece stored, and no piece read over while it is
still being hashed (issue #18: no test put a raw stream longer than one piece, and none would
notice the copy running ahead of the hash)."""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store.objects import (
    CODEC_RAW_ALIGNED,
    PIPE_CHUNK,
    _hash_and_write,
    _hash_and_write_copies,
)


def test_a_raw_stream_of_several_pieces_is_stored_whole(store: Store, tmp_path: Path) -> None:
    data = os.urandom(2 * PIPE_CHUNK + 12345)  # incompressible: the raw path
    path = tmp_path / "weights.bin"
    path.write_bytes(data)
    for oid in (store.objects.put_stream(io.BytesIO(data)), store.objects.put_file(path)):
        assert oid == hash_bytes(data)
        assert store.objects.path_of(oid).read_bytes()[0] == CODEC_RAW_ALIGNED
        assert store.objects.get_bytes(oid) == data


class _Counted(io.BytesIO):
    """A stream that counts its reads."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, n: int | None = -1) -> bytes:
        self.reads += 1
        return super().read(n)

    def readinto(self, b: object) -> int:
        self.reads += 1
        return super().readinto(b)  # type: ignore[arg-type]


class _HeldHasher:
    """A hasher whose updates wait until ``go`` is set, then keep a copy of what they got."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.seen: list[bytes] = []

    def update(self, piece: bytes | memoryview) -> None:
        assert self.go.wait(30)
        self.seen.append(bytes(piece))


Copy = Callable[[BinaryIO, bytes, object, BinaryIO], None]


@pytest.mark.parametrize("copy", [_hash_and_write, _hash_and_write_copies])
def test_the_copy_reads_no_further_than_one_piece_ahead_of_the_hash(
    tmp_path: Path, copy: Copy
) -> None:
    """While a piece is hashed, the next is read (two reads in all); a copy that read on would
    refill the buffer being hashed (the id of other bytes) or hold the whole stream in memory."""
    data = os.urandom(3 * PIPE_CHUNK)
    stream, hasher = _Counted(data), _HeldHasher()
    out_path = tmp_path / "out"
    with open(out_path, "wb") as out:
        worker = threading.Thread(target=copy, args=(stream, b"", hasher, out))
        worker.start()
        time.sleep(0.5)
        reads = stream.reads
        hasher.go.set()
        worker.join(30)
    assert not worker.is_alive()
    assert reads == 2
    assert b"".join(hasher.seen) == data
    assert out_path.read_bytes() == data
