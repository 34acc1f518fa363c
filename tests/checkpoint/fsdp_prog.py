"""FSDP2 training on CPU (gloo) for the sharded-checkpoint tests; run by torchrun.

``python -m torch.distributed.run --nproc_per_node=N fsdp_prog.py MODE STORE OUT``, MODE:

- ``train``: train steps 1-2, save step 2 (also two DTensors on a 2-D mesh when N is 4), dump
  the whole tensors (``saved2.pt``), train steps 3-4 (``ref4.pt``); then a fresh model resumes
  step 2 and trains steps 3-4 again (``resumed4.pt``): bitwise ``ref4.pt`` at the same N;
- ``reshard``: a fresh model loads the latest checkpoint (step s) whatever N saved it
  (``loaded.pt``), trains one step and saves it as step s + 1 (``saved<s+1>.pt``);
- ``kill``: train step 1, save it (``saved1.pt``); rank 1 is SIGKILLed inside the save of step 2.

Dumps hold whole tensors (``full_tensor()``), cloned, written by rank 0; ``exact.json`` says
what ``LoadedCheckpoint.exact`` was on each rank.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

VOCAB = 11


class Tiny(torch.nn.Module):
    """A one-block transformer; 11 rows (embedding, head) shard unevenly on 2 and 4 ranks."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 8)
        self.block = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.emb(x)))


def build(seed: int, mesh: object, mixed: bool) -> tuple[Tiny, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = Tiny()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16) if mixed else MixedPrecisionPolicy()
    fully_shard(model.block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def train(model: Tiny, opt: torch.optim.Optimizer, steps: range) -> None:
    for step in steps:
        g = torch.Generator().manual_seed(step * 100 + dist.get_rank())
        x = torch.randint(0, VOCAB, (4, 5), generator=g)
        loss = F.cross_entropy(model(x).float().reshape(-1, VOCAB), x.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()


def whole(t: object) -> torch.Tensor:
    full = t.full_tensor() if hasattr(t, "full_tensor") else t
    assert isinstance(full, torch.Tensor)
    return full.detach().clone()


def dump(state: dict[str, object], path: Path) -> None:
    flat: dict[str, torch.Tensor] = {}
    model, opt = state["model"], state["optimizer"]
    for k, v in model.state_dict().items():  # type: ignore[attr-defined]
        flat[f"model/{k}"] = whole(v)
    for i, s in opt.state_dict()["state"].items():  # type: ignore[attr-defined]
        for name, v in s.items():
            flat[f"optimizer/state/{i}/{name}"] = whole(v)
    for k, v in state.get("tp", {}).items():  # type: ignore[attr-defined]
        flat[f"tp/{k}"] = whole(v)
    if dist.get_rank() == 0:
        torch.save(flat, path)


def main() -> None:
    mode, store, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    mixed = os.environ.get("FSDP_PROG_MIXED") == "1"
    if mode == "train":
        model, opt = build(0, mesh, mixed)
        state: dict[str, object] = {"model": model, "optimizer": opt, "counter": 2}
        if world == 4:  # tensor-parallel style layouts on a 2-D mesh, uneven rows included
            mesh2 = init_device_mesh("cpu", (2, 2))
            w = torch.arange(48.0).reshape(6, 8)
            r = torch.arange(30.0).reshape(5, 6)
            state["tp"] = {
                "w": distribute_tensor(w, mesh2, [Shard(0), Shard(1)]),
                "r": distribute_tensor(r, mesh2, [Replicate(), Shard(0)]),
            }
        train(model, opt, range(1, 3))
        save_checkpoint(state, step=2, store=store, run_id="r")
        dump(state, out / "saved2.pt")
        train(model, opt, range(3, 5))
        dump(state, out / "ref4.pt")
        model, opt = build(7, mesh, mixed)
        again: dict[str, object] = {"model": model, "optimizer": opt}
        if world == 4:  # the same placements: read from each rank's own pieces
            again["tp"] = {
                "w": distribute_tensor(torch.zeros(6, 8), mesh2, [Shard(0), Shard(1)]),
                "r": distribute_tensor(torch.zeros(5, 6), mesh2, [Replicate(), Shard(0)]),
            }
        got = load_checkpoint(state=again, store=store, run_id="r")
        train(model, opt, range(3, 5))
        dump(again, out / "resumed4.pt")
    elif mode == "reshard":
        model, opt = build(7, mesh, mixed)
        state = {"model": model, "optimizer": opt}
        if os.environ.get("FSDP_PROG_TP") == "1":  # this job's own placements for them
            state["tp"] = {
                "w": distribute_tensor(torch.zeros(6, 8), mesh, [Shard(1)]),
                "r": distribute_tensor(torch.zeros(5, 6), mesh, [Shard(0)]),
            }
        got = load_checkpoint(state=state, store=store, run_id="r")
        dump(state, out / "loaded.pt")
        step = got.info.step + 1
        train(model, opt, range(step, step + 1))
        save_checkpoint(state, step=step, store=store, run_id="r")
        dump(state, out / f"saved{step}.pt")
    elif mode == "kill":
        model, opt = build(0, mesh, mixed)
        state = {"model": model, "optimizer": opt}
        train(model, opt, range(1, 2))
        save_checkpoint(state, step=1, store=store, run_id="r")
        dump(state, out / "saved1.pt")
        train(model, opt, range(2, 3))
        if rank == 1:
            os.environ["LEDGER_CKPT_KILL_AT"] = "after-objects"
        save_checkpoint(state, step=2, store=store, run_id="r")
        raise SystemExit("the save of step 2 returned")
    exacts = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(exacts, torch.tensor([float(got.exact)]))
    if rank == 0:
        (out / "exact.json").write_text(json.dumps([bool(e.item()) for e in exacts]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
