"""What reading a checkpoint's tensors checks (``ledger.torch.checkpoint.io.read_tensors``): the
manifest's own consistency, each object's length, decompression and hash, each error naming
the tensor and the object.

Pinned because mutation testing (issue #18) found these checks untested: a forged manifest
(wrong byte count or chunk count), a raw object one chunk short, a compressed object that does
not decompress, and a tensor read back from several chunks.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def _manifest(store: Store) -> tuple[dict[str, Any], dict[str, Any]]:
    record = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    return record, store.get_json(record["shards"][0]["manifest"])


def _forge(store: Store, record: dict[str, Any], shard: dict[str, Any]) -> str:
    manifest = store.put_json(shard)
    return store.put_json({**record, "shards": [{**record["shards"][0], "manifest": manifest}]})


def test_a_tensor_in_several_chunks_reads_back_whole(store: Store) -> None:
    torch.manual_seed(0)
    t = torch.randn(1000)  # 4000 bytes in chunks of 1024: three full, one of 928
    save_checkpoint({"t": t}, step=1, store=store, run_id="r", chunk_size=1024)
    _, shard = _manifest(store)
    assert len(shard["tensors"][0]["chunks"]) == 4
    assert torch.equal(load_checkpoint(store=store, run_id="r").state["t"], t)


@pytest.mark.parametrize(
    ("change", "described"),
    [
        ({"nbytes": 12}, "shape [4], float32, 12 bytes in 1 chunks"),
        ({"shape": [5]}, "shape [5], float32, 16 bytes in 1 chunks"),
        ({"chunks": "twice"}, "shape [4], float32, 16 bytes in 2 chunks"),
    ],
)
def test_a_manifest_that_contradicts_itself_is_refused(
    store: Store, change: dict[str, Any], described: str
) -> None:
    save_checkpoint({"w": torch.arange(4.0)}, step=1, store=store, run_id="r")
    record, shard = _manifest(store)
    entry = dict(shard["tensors"][0])
    if change.get("chunks") == "twice":
        change = {"chunks": entry["chunks"] * 2}
    entry.update(change)
    forged = _forge(store, record, {**shard, "tensors": [entry]})
    expected = "^" + re.escape(f"tensor w: manifest is inconsistent ({described})")
    with pytest.raises(CorruptObjectError, match=expected) as e:
        load_checkpoint(forged, store=store, run_id="r")
    assert e.value.oid == entry["chunks"][0]


def test_a_raw_object_shorter_than_its_chunk_is_refused_naming_its_length(store: Store) -> None:
    torch.manual_seed(0)
    save_checkpoint({"w": torch.randn(64)}, step=1, store=store, run_id="r")
    _, shard = _manifest(store)
    (chunk,) = shard["tensors"][0]["chunks"]
    path = store.objects.path_of(chunk)
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[:-4])
    expected = rf"^tensor w: object {chunk} holds 252 bytes, the manifest says 256 \("
    with pytest.raises(CorruptObjectError, match=expected):
        load_checkpoint(store=store, run_id="r")


def test_a_compressed_object_that_does_not_decompress_is_refused(store: Store) -> None:
    save_checkpoint({"z": torch.zeros(4096)}, step=1, store=store, run_id="r")
    _, shard = _manifest(store)
    (chunk,) = shard["tensors"][0]["chunks"]
    path = store.objects.path_of(chunk)
    data = bytearray(path.read_bytes())
    assert data[:1] == b"\x01"  # zstd
    data[5:9] = b"\xff\xff\xff\xff"  # inside the frame header
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match=rf"^tensor z: object {chunk} does not decompress"):
        load_checkpoint(store=store, run_id="r")


def test_a_flipped_byte_names_the_hash_it_has_now(store: Store) -> None:
    torch.manual_seed(0)
    save_checkpoint({"w": torch.randn(64)}, step=1, store=store, run_id="r")
    _, shard = _manifest(store)
    (chunk,) = shard["tensors"][0]["chunks"]
    path = store.objects.path_of(chunk)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    now = hash_bytes(bytes(data[1:]))
    expected = rf"^tensor w: object {chunk} is corrupt \(its bytes hash to {now[:19]}…\) \("
    with pytest.raises(CorruptObjectError, match=expected):
        load_checkpoint(store=store, run_id="r")
