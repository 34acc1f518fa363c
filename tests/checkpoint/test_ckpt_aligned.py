"""Checkpoint chunks in the page-aligned object layout (codec ``0x02``, docs/format.md "Object
encoding"): written aligned by both write paths, compared in place by the next save whether the
stored file is aligned or an older ledger's one-byte-header file, and a publish that finds an
older file of the chunk's size accepts it, one of another size refuses it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import IntegrityError
from ledger.store import Store
from ledger.store.objects import ALIGN_MIN, CODEC_RAW_ALIGNED, PAGE

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import reuse as ckpt_reuse  # noqa: E402
from ledger.torch.checkpoint import write as ckpt_write  # noqa: E402
from ledger.torch.checkpoint.io import write_tensors  # noqa: E402

pytestmark = [pytest.mark.torch]

N = ALIGN_MIN // 4 + 1000  # float32 elements: a chunk above the aligned threshold


@pytest.fixture(autouse=True)
def _fresh_mappings() -> Iterator[None]:
    ckpt_reuse.forget()
    yield
    ckpt_reuse.forget()


def _rewrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


@pytest.mark.parametrize("direct", [False, True])
def test_chunks_above_the_threshold_are_stored_aligned(
    store: Store, direct: bool, monkeypatch: Any
) -> None:
    if direct:  # every chunk the O_DIRECT way, in pieces smaller than the chunk
        monkeypatch.setattr(ckpt_write, "DIRECT_MIN", 1)
        monkeypatch.setattr(ckpt_write, "_PIECE", 3 * PAGE)
        monkeypatch.setattr(ckpt_write, "_buffers", ckpt_write._Buffers())
        monkeypatch.setattr(ckpt_write, "_direct_refused", set())
    t = torch.randn(N, generator=torch.Generator().manual_seed(1))
    writer = ckpt_write.ChunkWriter(store.objects)
    oid, _ = writer.put(memoryview(t.numpy()).cast("B"), False, direct=direct)
    writer.finish()
    data = store.objects.path_of(oid).read_bytes()
    assert data[0] == CODEC_RAW_ALIGNED and data[1:PAGE] == bytes(PAGE - 1)
    assert data[PAGE:] == t.numpy().tobytes()


@pytest.mark.skipif(ckpt_reuse.MEMCMP is None, reason="no memcmp to compare with")
@pytest.mark.parametrize("layout", ["aligned", "old one-byte header"])
def test_the_next_save_compares_with_the_stored_chunk_in_either_layout(
    store: Store, layout: str
) -> None:
    t = torch.randn(N, generator=torch.Generator().manual_seed(2))
    entries, _ = write_tensors(store.objects, [("t", t)])
    path = store.objects.path_of(entries[0].chunks[0])
    assert path.read_bytes()[0] == CODEC_RAW_ALIGNED
    if layout != "aligned":
        _rewrite(path, b"\x00" + t.numpy().tobytes())  # as an older ledger wrote it
        ckpt_reuse.forget()  # a new process: found stored, mapped once compared equal
        write_tensors(store.objects, [("t", t)])
    _, again = write_tensors(store.objects, [("t", t)])
    assert again.bytes_reused == N * 4 and again.bytes_new == 0
    t[5] += 1.0
    changed, after = write_tensors(store.objects, [("t", t)])
    assert after.bytes_reused == 0 and after.bytes_new == N * 4
    assert store.objects.get_bytes(changed[0].chunks[0]) == t.numpy().tobytes()


def test_a_publish_accepts_an_older_ledger_s_chunk_file_and_refuses_a_wrong_size(
    store: Store,
) -> None:
    w = torch.randn(N, generator=torch.Generator().manual_seed(3))
    save_checkpoint({"w": w}, step=1, store=store, run_id="r")
    latest = store.refs.get("checkpoints/r/latest") or ""
    shard = store.get_json(store.get_json(latest)["shards"][0]["manifest"])
    (chunk,) = shard["tensors"][0]["chunks"]
    path = store.objects.path_of(chunk)
    _rewrite(path, b"\x00" + w.numpy().tobytes())  # the same content, old layout
    save_checkpoint({"w": w}, step=2, store=store, run_id="r")
    back = load_checkpoint(2, store=store, run_id="r").state
    assert torch.equal(back["w"], w)
    _rewrite(path, b"\x00" + w.numpy().tobytes()[:-4])  # damaged: four bytes short
    ckpt_reuse.forget()
    expected = rf"^rank 0: tensor w: object {chunk} holds {N * 4 - 4} bytes, expected {N * 4}$"
    with pytest.raises(IntegrityError, match=expected):
        save_checkpoint({"w": w}, step=3, store=store, run_id="r")
