"""The object file's codec byte and the rules that choose it, pinned at their boundaries.

docs/format.md: a codec byte (``0x00`` raw, ``0x01`` one zstd frame, ``0x02`` raw from offset
4096: tests/test_objects_aligned.py) then the payload; zstd
is kept only when it saves at least 10%; content under 64 bytes is stored raw; content over
4 KiB whose first 4 KiB does not save 10% is stored raw without judging more; a stream (and
content over 1 MiB) is judged by its first MiB. Mutation testing (issue #18) showed that no
test pinned these numbers, so any of them could change without a test noticing.
"""

from __future__ import annotations

import io
import random

import pytest
import zstandard

from ledger.store import Store
from ledger.store.objects import HEAD, SAMPLE, compression_pays, head_pays


def _file(store: Store, oid: str) -> bytes:
    return store.objects.path_of(oid).read_bytes()


def test_codec_bytes_on_disk_are_the_documented_ones(store: Store) -> None:
    raw = store.objects.put_bytes(b"tiny")
    assert _file(store, raw) == b"\x00tiny"
    content = b"compressible " * 100
    packed = store.objects.put_bytes(content)
    data = _file(store, packed)
    assert data[:1] == b"\x01"
    assert zstandard.ZstdDecompressor().decompress(data[1:]) == content
    assert store.objects.get_bytes(packed) == content


def test_content_under_64_bytes_is_stored_raw(store: Store) -> None:
    assert not compression_pays(b"a" * 63) and compression_pays(b"a" * 64)
    assert _file(store, store.objects.put_bytes(b"a" * 63))[:1] == b"\x00"
    assert _file(store, store.objects.put_bytes(b"a" * 64))[:1] == b"\x01"


def _with_saving(zeros: int) -> bytes:
    """10,000 bytes that zstd shrinks by about ``zeros`` / 10,000 (zeros first: the head
    compresses, so the whole is judged)."""
    return bytes(zeros) + random.Random(7).randbytes(10_000 - zeros)


def test_zstd_is_kept_only_when_it_saves_at_least_ten_percent(store: Store) -> None:
    saves_12, saves_6 = _with_saving(1300), _with_saving(700)
    assert compression_pays(saves_12) and not compression_pays(saves_6)
    assert _file(store, store.objects.put_bytes(saves_12))[:1] == b"\x01"
    assert _file(store, store.objects.put_bytes(saves_6))[:1] == b"\x00"
    assert _file(store, store.objects.put_stream(io.BytesIO(saves_12 + b"s")))[:1] == b"\x01"
    assert _file(store, store.objects.put_stream(io.BytesIO(saves_6 + b"s")))[:1] == b"\x00"


def test_large_content_is_judged_by_its_first_mib(store: Store) -> None:
    """Zeros for 8 KiB, noise to 1 MiB, then 3 MiB of zeros: the head compresses, the first
    MiB does not, and so it is stored raw, although the whole compresses."""
    mib = 1 << 20
    content = bytes(2 * HEAD) + random.Random(3).randbytes(mib - 2 * HEAD) + bytes(3 * mib)
    assert compression_pays(content)
    from_bytes = store.objects.put_bytes(content)
    assert _file(store, from_bytes)[:1] == b"\x02"  # raw, and over 64 KiB: aligned
    store.objects.delete(from_bytes)
    from_stream = store.objects.put_stream(io.BytesIO(content))
    assert from_stream == from_bytes
    assert _file(store, from_stream)[:1] == b"\x02"
    # Zeros first: the sample compresses, and so does the whole.
    flipped = store.objects.put_bytes(content[mib:] + content[:mib])
    assert _file(store, flipped)[:1] == b"\x01"


def test_a_saving_of_exactly_ten_percent_is_kept(store: Store) -> None:
    """The rule is "at least 10%": content zstd shrinks to exactly 90% is stored compressed."""
    noise = random.Random(11).randbytes(10_000)
    packer = zstandard.ZstdCompressor(level=3)
    exact = None
    for keep in range(8_800, 9_100):  # a repeating filler then noise: +1 byte in, +1 packed
        content = (b"ab" * 5_000)[: 10_000 - keep] + noise[:keep]
        if len(packer.compress(content)) == 9_000:
            exact = content
            break
    assert exact is not None, "no content packs to exactly 90% with this zstd"
    assert compression_pays(exact) is True
    assert _file(store, store.objects.put_bytes(exact))[:1] == b"\x01"


def test_compression_pays_answers_a_bool() -> None:
    assert compression_pays(b"a" * 63) is False
    assert compression_pays(bytes(100)) is True
    assert compression_pays(random.Random(5).randbytes(100)) is False


def _judged_apart_by_one_byte() -> bytes:
    """Content longer than SAMPLE whose first SAMPLE bytes and first SAMPLE + 1 bytes fall on
    the two sides of the 10% line: ``ab`` filler, noise, then zeros (found by a search; the
    loop finds it again if another zstd packs a few bytes differently)."""
    mib, noise = 1 << 20, random.Random(13).randbytes(2 << 20)
    for z in range(85_465, 86_465):
        content = (b"ab" * mib)[:z] + noise[: mib - z - 20_000] + bytes(20_000 + 1000)
        if compression_pays(content[:mib]) != compression_pays(content[: mib + 1]):
            return content
    pytest.fail("no content is judged apart by one byte with this zstd")


class _ShortFirstRead(io.BytesIO):
    """A pipe's first read: one byte short of what was asked."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.first = True

    def read(self, n: int | None = -1) -> bytes:
        if self.first and n is not None and n > 1:
            self.first = False
            n -= 1
        return super().read(n)


def test_a_stream_is_judged_on_exactly_its_first_mib_like_put_bytes(store: Store) -> None:
    """The codec of a stream longer than SAMPLE is decided on its first SAMPLE bytes, not one
    more, as put_bytes decides; a first read one byte short (a pipe) is topped up to SAMPLE
    before it is judged."""
    content = _judged_apart_by_one_byte()
    want = b"\x01" if compression_pays(content[:SAMPLE]) else b"\x02"  # raw: over 64 KiB
    from_bytes = store.objects.put_bytes(content)
    assert _file(store, from_bytes)[:1] == want
    for stream in (io.BytesIO(content), _ShortFirstRead(content)):
        store.objects.delete(from_bytes)
        assert store.objects.put_stream(stream) == from_bytes
        assert _file(store, from_bytes)[:1] == want
        assert store.objects.get_bytes(from_bytes) == content


def test_content_over_4_kib_is_judged_on_its_head_first(store: Store) -> None:
    """Noise for the first 4 KiB, zeros after: stored raw, though the whole would pack; up to
    exactly 4 KiB the whole is judged, one byte more and the head decides."""
    rng = random.Random(17)
    noisy_head = rng.randbytes(HEAD) + bytes(9 * HEAD)
    assert not head_pays(noisy_head) and not compression_pays(noisy_head)
    assert _file(store, store.objects.put_bytes(noisy_head))[:1] == b"\x00"
    assert _file(store, store.objects.put_stream(io.BytesIO(noisy_head)))[:1] == b"\x00"
    half = rng.randbytes(HEAD // 2)
    whole = half + bytes(HEAD // 2)  # exactly HEAD: judged whole, and half of it is zeros
    assert head_pays(whole) and compression_pays(whole)
    assert _file(store, store.objects.put_bytes(whole))[:1] == b"\x01"
    longer = half + rng.randbytes(HEAD // 2) + bytes(HEAD)  # HEAD + HEAD: its head is noise
    assert not head_pays(longer) and not compression_pays(longer)
    one_more = rng.randbytes(HEAD) + bytes(1)
    assert not head_pays(one_more)
    assert head_pays(one_more[:HEAD])  # not over HEAD: the head rule does not apply
