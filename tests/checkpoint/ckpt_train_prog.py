"""A tiny training program for the exact-resume tests; run as a subprocess (also by torchrun).

It trains with shuffling, 2 DataLoader workers, dropout, AdamW, a step scheduler, a grad scaler,
an EMA copy and gradient accumulation; it appends every micro-batch loss (float.hex) to
``--losses``, saves at update ``--save-at`` and at the end, and can ``--resume`` from a run.
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, Dataset

from ledger.torch.checkpoint import (
    ResumableSampler,
    load_checkpoint,
    save_checkpoint,
    wait_for_checkpoints,
)


class Noisy(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Fixed data; per-sample noise from a generator seeded by the index, not a worker stream."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(42)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x @ torch.randn(8, 1, generator=g)).squeeze(1)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(1000 + i)
        return self.x[i] + 0.01 * torch.randn(8, generator=g), self.y[i]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ledger", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--until", type=int, required=True)
    p.add_argument("--save-at", type=int, default=-1)
    p.add_argument("--resume-from", default=None)
    p.add_argument("--resume-step", default="latest")
    p.add_argument("--forget-cursor", action="store_true")  # a broken resume, for the tests
    p.add_argument("--losses", required=True)
    p.add_argument("--accum", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--background", action="store_true")  # save_checkpoint(background=True)
    a = p.parse_args()

    torch.set_num_threads(1)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        torch.distributed.init_process_group("gloo")
    rank = torch.distributed.get_rank() if distributed else 0
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)

    ds = Noisy(48)
    sampler = ResumableSampler(ds, seed=123)
    loader = DataLoader(
        ds,
        batch_size=4,
        sampler=sampler,
        num_workers=a.workers,
        persistent_workers=a.workers > 0,
        generator=torch.Generator().manual_seed(7),  # iter() must not draw from the global RNG
    )
    model: torch.nn.Module = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 1)
    )
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    plain = model
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
    scaler = torch.amp.GradScaler("cpu", init_scale=128.0)
    counters = {"epoch": 0, "update": 0, "micro": 0, "samples": 0}
    state = {
        "model": model,
        "ema": ema,
        "optimizer": opt,
        "scheduler": sched,
        "scaler": scaler,
        "sampler": sampler,
        "counters": counters,
        "best_loss": float("inf"),
    }
    if a.resume_from:
        target = int(a.resume_step) if a.resume_step.isdigit() else a.resume_step
        load_checkpoint(target, state=state, run_id=a.resume_from, store=a.ledger)
        counters = state["counters"]
        if a.forget_cursor:
            sampler.consumed = 0

    losses = open(Path(a.losses), "a")  # noqa: SIM115
    done = counters["update"] >= a.until
    epoch = counters["epoch"]
    while not done:
        sampler.set_epoch(epoch)
        counters["epoch"] = epoch
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y) / a.accum
            scaler.scale(loss).backward()
            sampler.advance(len(x))
            counters["micro"] += 1
            counters["samples"] += len(x)
            losses.write(f"{rank} {counters['update']} {loss.item().hex()}\n")
            state["best_loss"] = min(state["best_loss"], loss.item())
            if counters["micro"] < a.accum:
                continue
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            sched.step()
            ema.update_parameters(plain)
            counters["micro"] = 0
            counters["update"] += 1
            if counters["update"] in (a.save_at, a.until):
                # A background save returns once it has copied the state; training goes on
                # while it writes, and the next save (or exit) waits for it.
                save_checkpoint(
                    state,
                    step=counters["update"],
                    store=a.ledger,
                    run_id=a.run_id,
                    background=a.background,
                )
            if counters["update"] >= a.until:
                done = True
                break
        epoch += 1
    losses.close()
    if distributed:
        # The last background save still gathers on its own group: wait before tearing down.
        # A single process does not wait here, and interpreter exit must wait for it.
        wait_for_checkpoints()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
