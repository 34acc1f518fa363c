"""BLAKE3-256 object ids: ``b3:`` followed by 64 lowercase hex digits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO

import blake3

__all__ = [
    "ALGO_PREFIX",
    "CHUNK",
    "OID_RE",
    "hash_bytes",
    "hash_file",
    "hash_stream",
    "hasher_for",
    "is_oid",
    "new_hasher",
]

ALGO_PREFIX = "b3:"
OID_RE = re.compile(r"^b3:[0-9a-f]{64}$")
CHUNK = 1 << 20  # 1 MiB: large enough for throughput, small enough for flat memory

# Hash in parallel above this size; blake3's threads pay off only for big buffers.
_MT_THRESHOLD = 8 << 20


def new_hasher(*, threaded: bool = True) -> blake3.blake3:
    """A hasher; ``threaded``: BLAKE3 may use threads of its own for each large update."""
    return blake3.blake3(max_threads=blake3.blake3.AUTO) if threaded else blake3.blake3()


def hasher_for(size: int) -> blake3.blake3:
    """A hasher for ``size`` bytes: threaded only where that pays."""
    return new_hasher() if size >= _MT_THRESHOLD else blake3.blake3()


def hash_bytes(data: bytes | memoryview) -> str:
    h = hasher_for(len(data))
    h.update(data)
    return ALGO_PREFIX + h.hexdigest()


def hash_stream(stream: BinaryIO, chunk: int = CHUNK) -> str:
    h = new_hasher()
    buf = bytearray(chunk)
    view = memoryview(buf)
    while n := stream.readinto(view):  # type: ignore[attr-defined]
        h.update(view[:n])
    return ALGO_PREFIX + h.hexdigest()


def hash_file(path: str | Path) -> str:
    with open(path, "rb", buffering=0) as f:
        return hash_stream(f)  # type: ignore[arg-type]


def is_oid(value: object) -> bool:
    return isinstance(value, str) and OID_RE.match(value) is not None
