"""The catch-all digest comparator: the first differing byte, found exactly at every offset.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger._hashing import hash_file
from ledger.replay.compare import CompareSettings, digest
from ledger.replay.compare.digest import compare_digests, first_differing_byte

SETTINGS = CompareSettings()
MIB = 1 << 20


def _pair(tmp_path: Path, a: bytes, b: bytes) -> tuple[Path, Path]:
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a)
    pb.write_bytes(b)
    return pa, pb


class _CountedView:
    """A memoryview that counts its comparisons, and stops a search that goes on past
    ``limit`` (an endless loop fails here at once instead of spinning)."""

    def __init__(self, view: memoryview, count: list[int], limit: int) -> None:
        self.view, self.count, self.limit = view, count, limit

    def __getitem__(self, key: slice) -> _CountedView:
        return _CountedView(self.view[key], self.count, self.limit)

    def __eq__(self, other: object) -> bool:
        assert isinstance(other, _CountedView)
        self.count[0] += 1
        assert self.count[0] <= self.limit, f"more than {self.limit} comparisons"
        return self.view == other.view

    __hash__ = None  # type: ignore[assignment]


# First in the file: under a mutant that never ends the search (``hi - lo`` -> ``hi + lo``), the
# mutation harness stops at this test's failure instead of timing out the tests after it.
@pytest.mark.parametrize("size", [2, 3, 7, 8, 33, 1000, MIB])
def test_the_first_difference_takes_one_comparison_per_halving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A binary search: one comparison of the whole, then one per halving of the range."""
    count = [0]
    limit = size.bit_length() + 1  # 21 comparisons for a MiB
    monkeypatch.setattr(
        digest,
        "memoryview",
        lambda data: _CountedView(memoryview(data), count, limit),
        raising=False,
    )
    base = bytes(range(256)) * (size // 256 + 1)
    for at in sorted({0, 1, size // 2, size - 2, size - 1}):
        count[0] = 0
        changed = bytearray(base[:size])
        changed[at] ^= 0x5A
        a, b = _pair(tmp_path, base[:size], bytes(changed))
        assert first_differing_byte(a, b) == at, (size, at)
        assert 1 < count[0] <= limit, (size, at, count[0])


@pytest.mark.parametrize("size", [1, 2, 3, 7, 8, 33, 1000])
def test_every_offset_is_found(tmp_path: Path, size: int) -> None:
    base = (bytes(range(256)) * (size // 256 + 1))[:size]
    offsets = range(size) if size < 100 else (0, 1, 499, 500, 511, 512, 998, 999)
    for at in offsets:
        changed = bytearray(base)
        changed[at] ^= 0x5A
        a, b = _pair(tmp_path, base, bytes(changed))
        assert first_differing_byte(a, b) == at, (size, at)


def test_equal_files_have_no_differing_byte(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"same bytes", b"same bytes")
    assert first_differing_byte(a, b) is None
    c, d = _pair(tmp_path, b"", b"")
    assert first_differing_byte(c, d) is None


def test_a_prefix_differs_at_its_length(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"abc", b"abcdef")
    assert first_differing_byte(a, b) == 3
    assert first_differing_byte(b, a) == 3
    c, d = _pair(tmp_path, b"", b"x")
    assert first_differing_byte(c, d) == 0


def test_offsets_past_the_first_chunk(tmp_path: Path) -> None:
    base = bytes(2 * MIB + 10)
    for at in (MIB - 1, MIB, MIB + 1, 2 * MIB + 9):
        changed = bytearray(base)
        changed[at] = 1
        a, b = _pair(tmp_path, base, bytes(changed))
        assert first_differing_byte(a, b) == at, at
    c, d = _pair(tmp_path, base, base + b"tail")
    assert first_differing_byte(c, d) == len(base)
    e, f = _pair(tmp_path, bytes(MIB), bytes(MIB) + b"x")
    assert first_differing_byte(e, f) == MIB


def test_the_comparison_reports_offset_sizes_and_digests(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"abcdef", b"abXdefgh")
    result = compare_digests(a, b, SETTINGS)
    assert (result.path, result.comparator, result.status) == ("a.bin", "digest", "different")
    assert (result.mismatches, result.total, result.unit) == (1, 1, "files")
    diff = result.first_difference
    assert diff is not None
    assert diff.kind == "content"
    assert diff.description == "content differs from byte 2 (6 vs 8 bytes)"
    assert diff.index == [2]
    assert (diff.original, diff.replay) == (hash_file(a), hash_file(b))
    same = compare_digests(a, a, SETTINGS)
    assert (same.status, same.total, same.unit, same.mismatches) == ("identical", 1, "files", 0)
