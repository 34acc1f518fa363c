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
