"""DTensor pieces in one process (no torchrun): a FSDP2 model on a one-rank gloo group saves
(the reported ``.numpy() is not supported for tensor subclasses`` on the old code) and loads
into a plain model; a reshard reads only the chunks that overlap the box it loads; rank 0
refuses to publish pieces that do not make a tensor whole."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import CorruptObjectError
from ledger.records.base import record_from_json
from ledger.records.checkpoint import CheckpointShard, ShardLayout, TensorEntry
from ledger.run.contract import checkpoint_events
from ledger.store import ObjectStore, Store

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint.common import read_checkpoint  # noqa: E402
from ledger.torch.checkpoint.io import write_tensors  # noqa: E402
from ledger.torch.checkpoint.reshard import assemble  # noqa: E402
from ledger.torch.checkpoint.save import _layout_gap  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_fsdp2_state_saves_and_loads_into_a_plain_model(
    tmp_path: Path, one_rank: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    store = Store.init(tmp_path / "store")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
    fully_shard(model, mesh=init_device_mesh("cpu", (1,)))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    info = save_checkpoint(
        {"model": model, "optimizer": opt, "n": 1}, step=1, store=store, run_id="r"
    )
    want = {k: v.full_tensor().clone() for k, v in model.state_dict().items()}
    moments = {i: s["exp_avg"].full_tensor().clone() for i, s in opt.state_dict()["state"].items()}

    rec = read_checkpoint(store, info.oid)
    shard = record_from_json(store.get_json(rec.shards[0].manifest), CheckpointShard)
    by_key = {e.key: e for e in shard.tensors}
    assert by_key["model/0.weight"].layout == ShardLayout(
        shape=[5, 3], offset=[0, 0], placements=["S(0)"], mesh=[1]
    )
    assert by_key["optimizer/state/0/step"].layout is None

    plain = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
    popt = torch.optim.Adam(plain.parameters(), lr=0.1)
    monkeypatch.setenv("LEDGER_RUN_DIR", str(tmp_path))
    got = load_checkpoint(state={"model": plain, "optimizer": popt}, store=store, run_id="r")
    assert got.exact  # one rank: its pieces are the whole tensors, read as saved
    # the run record keeps the label; an event without one has no such keys at all
    (event,), _notes = checkpoint_events(tmp_path)
    assert (event.continuation, event.saved_world_size) == ("exact", 1)
    plain_event = event.model_copy(update={"continuation": None, "saved_world_size": None})
    assert "continuation" not in plain_event.model_dump(mode="json")
    monkeypatch.delenv("LEDGER_RUN_DIR")
    for k, v in plain.state_dict().items():
        assert type(v) is torch.Tensor and torch.equal(v, want[k])
    for i, s in popt.state_dict()["state"].items():
        assert torch.equal(s["exp_avg"], moments[i])

    # a background save copies the local pieces before it returns
    pending = save_checkpoint({"model": model}, step=2, store=store, run_id="r", background=True)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    pending.wait()
    got = load_checkpoint(2, state={"model": plain}, store=store, run_id="r")
    assert all(torch.equal(v, want[k]) for k, v in plain.state_dict().items())


def test_a_reshard_reads_only_the_chunks_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.init(tmp_path / "store")
    whole = torch.arange(8 * 6, dtype=torch.float32).reshape(8, 6)
    chunk = 4 * 6  # one row per chunk
    entries = []
    for at in (0, 4):  # two saved ranks, four rows each
        (e,), _stats = write_tensors(store.objects, [("w", whole[at : at + 4])], chunk_size=chunk)
        layout = ShardLayout(shape=[8, 6], offset=[at, 0], placements=["S(0)"], mesh=[2])
        entries.append((e.model_copy(update={"layout": layout}), chunk))
    opened: list[str] = []
    real = ObjectStore.open

    def spy(self: ObjectStore, oid: str) -> Any:
        opened.append(oid)
        return real(self, oid)

    monkeypatch.setattr(ObjectStore, "open", spy)
    # rows 3-5, columns 2-3: the last row of the first piece, two rows of the second
    got = assemble(store, entries, "w", ((3, 2), (3, 2)))
    assert torch.equal(got, whole[3:6, 2:4])
    first, second = entries[0][0].chunks, entries[1][0].chunks
    assert sorted(opened) == sorted([first[3], second[0], second[1]])


def _saved_pieces(
    store: Store, whole: Any, chunk: int, rows: int = 4
) -> list[tuple[TensorEntry, int]]:
    """``whole`` saved as pieces of ``rows`` rows (one per saved rank), in chunks of
    ``chunk`` bytes, with their layouts."""
    pieces = []
    for at in range(0, whole.shape[0], rows):
        part = whole[at : at + rows]
        (e,), _ = write_tensors(store.objects, [("w", part)], chunk_size=chunk, compress=False)
        layout = ShardLayout(shape=list(whole.shape), offset=[at, 0], placements=["S(0)"], mesh=[2])
        pieces.append((e.model_copy(update={"layout": layout}), chunk))
    return pieces


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(object id, bytes) of every chunk a load reads from now on."""
    import ledger.torch.checkpoint.io as ckpt_io

    seen: list[tuple[str, int]] = []
    real = ckpt_io._read_into

    def spy(objects: ObjectStore, oid: str, dest: memoryview, *a: Any, **k: Any) -> None:
        seen.append((oid, len(dest)))
        real(objects, oid, dest, *a, **k)

    monkeypatch.setattr(ckpt_io, "_read_into", spy)
    return seen


def test_a_cut_across_the_columns_reads_only_the_chunks_holding_its_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tensor-parallel cut (columns 0-2 of every row) of pieces saved in half-row chunks:
    the chunks of the other half of each row hold none of its bytes and are not read. On the
    old code every chunk from the first byte of the cut to its last was: 7 of each piece's 8,
    168 bytes where 96 are needed."""
    store = Store.init(tmp_path / "store")
    whole = torch.arange(8 * 6, dtype=torch.float32).reshape(8, 6)
    pieces = _saved_pieces(store, whole, chunk=3 * 4)
    reads = _reads(monkeypatch)
    got = assemble(store, pieces, "w", ((0, 0), (8, 3)))
    assert torch.equal(got, whole[:, :3])
    first, second = pieces[0][0].chunks, pieces[1][0].chunks
    assert sorted(reads) == sorted((c[j], 12) for c in (first, second) for j in (0, 2, 4, 6))
    assert sum(n for _oid, n in reads) == 8 * 3 * 4  # the bytes it needs, no more


def test_a_cut_along_the_rows_reads_the_chunks_it_cuts_whole_and_verifies_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows 3-5 of pieces saved in chunks of 5 floats (no multiple of a row): the chunks the
    cut begins and ends in are read whole and hashed; a byte changed in one of them, even one
    the cut does not use, is refused, and nothing is returned."""
    store = Store.init(tmp_path / "store")
    whole = torch.arange(8 * 6, dtype=torch.float32).reshape(8, 6)
    pieces = _saved_pieces(store, whole, chunk=5 * 4)
    reads = _reads(monkeypatch)
    got = assemble(store, pieces, "w", ((3, 0), (3, 6)))
    assert torch.equal(got, whole[3:6])
    first, second = pieces[0][0].chunks, pieces[1][0].chunks
    # row 3 of the first piece: its floats 18-23, in chunks 3 (15-19) and 4 (20-23, the
    # last, short); rows 0-1 of the second: floats 0-11, chunks 0-2 (the third cut at 12)
    assert sorted(reads) == sorted(
        [(first[3], 20), (first[4], 16), (second[0], 20), (second[1], 20), (second[2], 20)]
    )
    # float 14 of the second piece (row 2, not loaded) is the last byte of its chunk 2
    path = store.objects.path_of(second[2])
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match=r"tensor w: object .* is corrupt"):
        assemble(store, pieces, "w", ((3, 0), (3, 6)))


def test_a_changed_byte_in_a_chunk_a_cut_skips_is_not_read(tmp_path: Path) -> None:
    """The other side of reading only what is needed: a chunk holding none of the cut's bytes
    is not read, so damage there is found by the load that needs it (or `ledger verify`),
    and one holding any of them is refused."""
    store = Store.init(tmp_path / "store")
    whole = torch.arange(8 * 6, dtype=torch.float32).reshape(8, 6)
    pieces = _saved_pieces(store, whole, chunk=3 * 4)
    path = store.objects.path_of(pieces[0][0].chunks[2])  # columns 0-2 of row 1
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    got = assemble(store, pieces, "w", ((0, 3), (8, 3)))  # columns 3-5: chunk 2 not read
    assert torch.equal(got, whole[:, 3:])
    with pytest.raises(CorruptObjectError, match="tensor w"):
        assemble(store, pieces, "w", ((0, 0), (8, 3)))  # columns 0-2: chunk 2 is read


def _shard(rank: int, entries: list[TensorEntry]) -> CheckpointShard:
    return CheckpointShard(
        run_id="r",
        step=1,
        rank=rank,
        world_size=2,
        chunk_size=64,
        tensors=entries,
        state="b3:" + "0" * 64,
        created=datetime.now(UTC),
        bytes_total=0,
        bytes_new=0,
    )


def _piece(at: int, rows: int) -> TensorEntry:
    layout = ShardLayout(shape=[4], offset=[at], placements=["S(0)"], mesh=[2])
    return TensorEntry(key="w", dtype="float32", shape=[rows], nbytes=0, chunks=[], layout=layout)


def test_pieces_that_do_not_make_the_tensor_whole_are_not_published() -> None:
    assert _layout_gap([_shard(0, [_piece(0, 2)]), _shard(1, [_piece(2, 2)])]) is None
    gap = _layout_gap([_shard(0, [_piece(0, 2)]), _shard(1, [_piece(0, 2)])])
    assert gap is not None and "do not make up its 4 elements" in gap
    gap = _layout_gap([_shard(0, [_piece(0, 2)]), _shard(1, [])])
    assert gap is not None and "on ranks [0] only" in gap
