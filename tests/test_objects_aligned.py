"""Object files whose raw content starts on a page (codec ``0x02``, docs/format.md "Object
encoding"): written for raw content of ``ALIGN_MIN`` bytes or more, read beside the older
one-byte-header files in one store, the padding checked by every reader and by verify."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest
import zstandard

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError
from ledger.store import Store
from ledger.store.batch import put_files
from ledger.store.gc import collect_garbage
from ledger.store.objects import (
    ALIGN_MIN,
    CODEC_RAW,
    CODEC_RAW_ALIGNED,
    CODEC_ZSTD,
    PAGE,
    SAMPLE,
    header_for,
    raw_payload_offset,
    split_object,
)
from ledger.store.verify import verify_store


def _noise(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


def _file(store: Store, oid: str) -> bytes:
    return store.objects.path_of(oid).read_bytes()


def _plant(store: Store, content: bytes, file_bytes: bytes) -> str:
    """An object file written by hand (an older ledger's, or a damaged one)."""
    oid = hash_bytes(content)
    path = store.objects.path_of(oid)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.chmod(0o644)
    path.write_bytes(file_bytes)
    return oid


def _reads_back(store: Store, oid: str, content: bytes, tmp_path: Path) -> None:
    """Every way of reading an object gives ``content``."""
    objects = store.objects
    assert objects.get_bytes(oid) == content
    with objects.open(oid) as f:
        assert f.read() == content
    out = tmp_path / "out.bin"
    with open(out, "wb") as f:  # a real file: the kernel's copy
        assert objects.copy_to(oid, f) == len(content)
    assert out.read_bytes() == content
    buf = io.BytesIO()  # not a file: read and written
    objects.copy_to(oid, buf)
    assert buf.getvalue() == content
    assert objects.content_size(oid) == len(content)
    objects.verify(oid)


def test_large_raw_content_starts_on_a_page_and_small_content_keeps_one_byte(
    store: Store,
) -> None:
    big = _noise(ALIGN_MIN)
    data = _file(store, store.objects.put_bytes(big))
    assert data[0] == CODEC_RAW_ALIGNED and data[1:PAGE] == bytes(PAGE - 1)
    assert data[PAGE:] == big and len(data) == PAGE + len(big)
    small = _noise(ALIGN_MIN - 1)
    assert _file(store, store.objects.put_bytes(small)) == b"\x00" + small


@pytest.mark.parametrize("size", [0, 1, ALIGN_MIN - 1, ALIGN_MIN, ALIGN_MIN + 1, SAMPLE + 7])
@pytest.mark.parametrize("writer", ["put_bytes", "put_stream", "put_file", "put_files"])
def test_every_writer_puts_the_threshold_in_the_same_place(
    tmp_path: Path, writer: str, size: int
) -> None:
    store = Store.init(tmp_path / "ledger")
    content = _noise(size, seed=size)
    src = tmp_path / "src.bin"
    src.write_bytes(content)
    if writer == "put_bytes":
        oid = store.objects.put_bytes(content)
    elif writer == "put_stream":
        oid = store.objects.put_stream(io.BytesIO(content))
    elif writer == "put_file":
        oid = store.objects.put_file(src)
    else:
        (oid,) = put_files(store.objects, [str(src)])
    assert oid == hash_bytes(content)  # the id never depends on the layout
    data = _file(store, oid)
    want = CODEC_RAW_ALIGNED if size >= ALIGN_MIN else CODEC_RAW
    assert data[0] == want
    assert data == header_for(size, compressed=False) + content
    _reads_back(store, oid, content, tmp_path)


def test_a_stream_read_short_is_still_aligned_by_its_whole_size(store: Store) -> None:
    class Trickle(io.RawIOBase):
        """A pipe: at most 1000 bytes a read."""

        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            out, self.data = self.data[: min(n, 1000)], self.data[min(n, 1000) :]
            return out

    content = _noise(ALIGN_MIN + 10)
    oid = store.objects.put_stream(Trickle(content))  # type: ignore[arg-type]
    assert _file(store, oid)[0] == CODEC_RAW_ALIGNED
    assert store.objects.get_bytes(oid) == content


def test_compressed_content_keeps_the_one_byte_header_at_any_size(
    store: Store, tmp_path: Path
) -> None:
    content = b"compressible " * (2 * ALIGN_MIN // 13)
    for oid in (
        store.objects.put_bytes(content),
        store.objects.put_stream(io.BytesIO(content + b"!")),
    ):
        assert _file(store, oid)[0] == CODEC_ZSTD
    oid = store.objects.put_bytes(content)
    _reads_back(store, oid, content, tmp_path)
    with open(store.objects.path_of(oid), "rb") as f:
        assert raw_payload_offset(f.fileno()) is None


def test_raw_payload_offset_says_where_the_content_starts(store: Store) -> None:
    small, big = store.objects.put_bytes(b"tiny"), store.objects.put_bytes(_noise(ALIGN_MIN))
    for oid, at in ((small, 1), (big, PAGE)):
        with open(store.objects.path_of(oid), "rb") as f:
            assert raw_payload_offset(f.fileno()) == at
            assert os.pread(f.fileno(), 4, at) == store.objects.get_bytes(oid)[:4]


def test_split_object_reads_each_codec(store: Store) -> None:
    packed = zstandard.ZstdCompressor().compress(b"z" * 100)
    assert split_object(b"\x00abc") == (CODEC_RAW, memoryview(b"abc"))
    codec, payload = split_object(b"\x01" + packed)
    assert codec == CODEC_ZSTD and bytes(payload) == packed
    codec, payload = split_object(b"\x02" + bytes(PAGE - 1) + b"abc")
    assert codec == CODEC_RAW_ALIGNED and bytes(payload) == b"abc"


def test_a_store_written_by_the_old_format_reads_and_verifies(store: Store, tmp_path: Path) -> None:
    # Files as ledgers before the aligned codec wrote them, at every size: one byte, then
    # the payload (raw or one zstd frame).
    big, small = _noise(ALIGN_MIN * 3), _noise(100)
    text = b"old compressed " * 10_000
    old = {
        _plant(store, big, b"\x00" + big): big,
        _plant(store, small, b"\x00" + small): small,
        _plant(store, text, b"\x01" + zstandard.ZstdCompressor().compress(text)): text,
    }
    for oid, content in old.items():
        _reads_back(store, oid, content, tmp_path)
        with open(store.objects.path_of(oid), "rb") as f:
            at = raw_payload_offset(f.fileno())
        assert at == (None if content is text else 1)
    assert verify_store(store).ok
    # Storing the same content again keeps the old file: the id is there already.
    assert store.objects.put_bytes(big) in old
    assert _file(store, hash_bytes(big))[0] == CODEC_RAW


def test_old_and_new_files_mix_in_one_store_and_gc_takes_either(store: Store) -> None:
    old_kept, old_gone = _noise(ALIGN_MIN * 2, 1), _noise(ALIGN_MIN * 2, 2)
    kept_old = _plant(store, old_kept, b"\x00" + old_kept)
    gone_old = _plant(store, old_gone, b"\x00" + old_gone)
    kept_new = store.objects.put_bytes(_noise(ALIGN_MIN, 3))
    gone_new = store.objects.put_bytes(_noise(ALIGN_MIN, 4))
    assert _file(store, kept_new)[0] == _file(store, gone_new)[0] == CODEC_RAW_ALIGNED
    rec = store.put_json({"kind": "note", "schema": 1, "a": kept_old, "b": kept_new})
    store.set_ref("notes/a", rec)
    report = verify_store(store)
    assert report.ok and report.objects == 5
    report = collect_garbage(store, delete=True, grace_seconds=0)
    assert sorted(report.deleted) == sorted([gone_old, gone_new])
    assert sorted(store.objects) == sorted([kept_old, kept_new, rec])
    assert verify_store(store).ok


def _damage_padding(store: Store, at: int) -> str:
    content = _noise(ALIGN_MIN, at)
    oid = store.objects.put_bytes(content)
    data = bytearray(_file(store, oid))
    data[at] = 0x41
    return _plant(store, content, bytes(data))


@pytest.mark.parametrize("at", [1, PAGE // 2, PAGE - 1])
def test_a_non_zero_padding_byte_is_corruption(store: Store, at: int) -> None:
    """The content still hashes to its id: only the header check catches bytes hidden there."""
    oid = _damage_padding(store, at)
    report = verify_store(store)
    assert [p.subject for p in report.problems] == [oid]
    assert "padding" in report.problems[0].message
    for read in (store.objects.get_bytes, store.objects.open, store.objects.content_size):
        with pytest.raises(CorruptObjectError, match="padding"):
            read(oid)
    with (
        open(store.objects.path_of(oid), "rb") as f,
        pytest.raises(CorruptObjectError, match="padding"),
    ):
        raw_payload_offset(f.fileno())


@pytest.mark.parametrize("keep", [1, 100, PAGE - 1])
def test_a_padded_file_cut_inside_its_header_is_corruption(store: Store, keep: int) -> None:
    content = _noise(ALIGN_MIN, keep)
    oid = store.objects.put_bytes(content)
    _plant(store, content, _file(store, oid)[:keep])
    report = verify_store(store)
    assert [p.subject for p in report.problems] == [oid]
    assert "less than its 4096-byte header" in report.problems[0].message
    with pytest.raises(CorruptObjectError, match="header"):
        store.objects.get_bytes(oid)


def test_a_padded_file_cut_inside_its_content_fails_its_hash(store: Store) -> None:
    content = _noise(ALIGN_MIN + 5)
    oid = store.objects.put_bytes(content)
    _plant(store, content, _file(store, oid)[: PAGE + 10])
    report = verify_store(store)
    assert [p.subject for p in report.problems] == [oid]
    assert "does not hash to its id" in report.problems[0].message


@pytest.mark.parametrize("codec", [b"\x03", b"\xff", b""])
def test_an_unknown_codec_byte_is_still_refused(store: Store, codec: bytes) -> None:
    content = _noise(ALIGN_MIN)
    oid = _plant(store, content, codec + bytes(PAGE - 1) + content if codec else b"")
    for read in (store.objects.get_bytes, store.objects.open, store.objects.verify):
        with pytest.raises(CorruptObjectError, match="unknown codec byte"):
            read(oid)
    assert [p.subject for p in verify_store(store).problems] == [oid]
