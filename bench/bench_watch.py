"""Training-step overhead of ``ledger.torch.watch`` on a small model (every=1 and every=10)."""

from __future__ import annotations

import sys
import time
from typing import Any

from bench import Row

NAME = "watch"


CONFIGS: tuple[int | None, ...] = (None, 1, 10)  # None: no watch (the reference)


def _trainer(every: int | None, clip: float | None = None) -> tuple[Any, int]:
    """A step function for one configuration, and the model's parameter count."""
    import torch
    from torch import nn

    from ledger.runtime import RankInfo, Run
    from ledger.torch import watch

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    w = watch(model, opt, every=every, clip=clip, run=Run(rank=RankInfo())) if every else None

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()  # type: ignore[no-untyped-call]
        if w is not None:
            w.step(loss)
        opt.step()
        opt.zero_grad()

    return step, sum(p.numel() for p in model.parameters())


def bench_watch(steps: int, rounds: int = 5) -> tuple[dict[int | None, float], int]:
    """Best ms per step of each configuration. Rounds alternate between the configurations,
    so a burst of load on the shared machine hits all of them, not one."""
    trainers = {every: _trainer(every) for every in CONFIGS}
    for step, _ in trainers.values():
        for _ in range(10):
            step()
    best = dict.fromkeys(CONFIGS, float("inf"))
    for _ in range(rounds):
        for every, (step, _) in trainers.items():
            t = time.perf_counter()
            for _ in range(steps):
                step()
            best[every] = min(best[every], (time.perf_counter() - t) / steps * 1e3)
    return best, trainers[None][1]


def run(quick: bool) -> list[Row]:
    steps = 50 if quick else 300
    rounds = 3 if quick else 5
    best, params = bench_watch(steps, rounds)
    base = best[None]
    ref = f"no watch {base:.3f} ms"
    note = (
        f"Adam step of a {params:,}-parameter MLP on CPU; best of {rounds} interleaved rounds "
        f"× {steps} steps per configuration"
    )
    rows = [Row(NAME, "training step, no watch", base, "ms", note=note)]
    for every in CONFIGS[1:]:
        what = f"training step, watch every={every}"
        rows.append(Row(NAME, what, best[every], "ms", ref, best[every] / base, note=note))
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
