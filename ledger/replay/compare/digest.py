"""Everything else: equal content digests (BLAKE3, the object id) or different.

Without knowing the format there is no tolerance to apply; the first differing byte offset at
least tells a reader where to look.
"""

from __future__ import annotations

from pathlib import Path

from ..._hashing import hash_file
from ...records.verdict_parts import CompareSettings, Difference, FileComparison

__all__ = ["compare_digests", "first_differing_byte"]

_CHUNK = 1 << 20


def _first_difference(x: bytes, y: bytes) -> int:
    """Index of the first byte where ``x`` and ``y`` differ, else the shorter length: a binary
    search of slice comparisons (each in C), so no numpy and no per-byte Python loop."""
    n = min(len(x), len(y))
    a, b = memoryview(x)[:n], memoryview(y)[:n]
    if a == b:
        return n
    lo, hi = 0, n  # the first difference lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def first_differing_byte(original: Path, replay: Path) -> int | None:
    """Offset of the first byte that differs (the shorter length if one is a prefix)."""
    offset = 0
    with open(original, "rb") as fa, open(replay, "rb") as fb:
        while True:
            x, y = fa.read(_CHUNK), fb.read(_CHUNK)
            if x != y:
                return offset + _first_difference(x, y)
            if not x:
                return None
            offset += len(x)


def compare_digests(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    oa, ob = hash_file(original), hash_file(replay)
    if oa == ob:
        return FileComparison(
            path=original.name, comparator="digest", status="identical", total=1, unit="files"
        )
    size_a, size_b = original.stat().st_size, replay.stat().st_size
    offset = first_differing_byte(original, replay)
    return FileComparison(
        path=original.name,
        comparator="digest",
        status="different",
        mismatches=1,
        total=1,
        unit="files",
        first_difference=Difference(
            kind="content",
            description=f"content differs from byte {offset} ({size_a} vs {size_b} bytes)",
            index=None if offset is None else [offset],
            original=oa,
            replay=ob,
        ),
    )
