"""The catch-all digest comparator: the first differing byte, found exactly at every offset.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger._hashing import hash_file
from ledger.replay.compare import CompareSettings
from ledger.replay.compare.digest import compare_digests, first_differing_byte

SETTINGS = CompareSettings()
MIB = 1 << 20


def _pair(tmp_path: Path, a: bytes, b: bytes) -> tuple[Path, Path]:
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a)
    pb.write_bytes(b)
    return pa, pb


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
