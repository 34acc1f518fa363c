"""Training-step overhead of ``ledger.torch.watch`` on a small model (every=1 and every=10)."""

from __future__ import annotations

import sys
import time
from typing import Any

from bench import Row

NAME = "watch"


def bench_watch(every: int | None, steps: int, clip: float | None = None) -> dict[str, Any]:
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

    for _ in range(10):
        step()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - t) / steps)
    if w is not None:
        w.close()
    params = sum(p.numel() for p in model.parameters())
    return {
        "name": f"watch every={every}" if every else "no watch",
        "ms_per_step": best * 1e3,
        "params": params,
    }


def run(quick: bool) -> list[Row]:
    steps = 50 if quick else 300
    base = bench_watch(None, steps)
    ref = f"no watch {base['ms_per_step']:.3f} ms"
    note = f"Adam step of a {base['params']:,}-parameter MLP on CPU, best of 3 × {steps} steps"
    rows = [Row(NAME, "training step, no watch", base["ms_per_step"], "ms", note=note)]
    for every in (1, 10):
        row = bench_watch(every, steps)
        ratio = row["ms_per_step"] / base["ms_per_step"]
        what = f"training step, watch every={every}"
        rows.append(Row(NAME, what, row["ms_per_step"], "ms", ref, ratio, note=note))
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
