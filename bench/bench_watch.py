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


def bench_watch(steps: int, rounds: int = 5) -> tuple[dict[int | None, list[float]], int]:
    """Ms per step of each configuration in each round. A round runs a short block of each
    configuration, in an order that rotates from round to round, so a burst of load on the
    shared machine hits neighbours in time alike; ratios are taken within a round."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # other processes' load then slows every configuration alike
    try:
        trainers = {every: _trainer(every) for every in CONFIGS}
        for step, _ in trainers.values():
            for _ in range(10):
                step()
        times: dict[int | None, list[float]] = {every: [] for every in CONFIGS}
        order = list(CONFIGS)
        for r in range(rounds):
            for every in order[r % len(order) :] + order[: r % len(order)]:
                step = trainers[every][0]
                t = time.perf_counter()
                for _ in range(steps):
                    step()
                times[every].append((time.perf_counter() - t) / steps * 1e3)
    finally:
        torch.set_num_threads(threads)
    return times, trainers[None][1]


def run(quick: bool) -> list[Row]:
    import statistics

    steps = 20 if quick else 50
    rounds = 6 if quick else 30
    times, params = bench_watch(steps, rounds)
    base = statistics.median(times[None])
    ref = f"no watch {base:.3f} ms"
    note = (
        f"Adam step of a {params:,}-parameter MLP on CPU, one torch thread; {rounds} rounds of "
        f"{steps} steps per configuration, the order rotating; value: median ms per step; "
        "ratio: median over rounds of the round's ms over the same round's no-watch ms"
    )
    rows = [Row(NAME, "training step, no watch", base, "ms", note=note)]
    for every in CONFIGS[1:]:
        ratios = [a / b for a, b in zip(times[every], times[None], strict=True)]
        r = statistics.median(ratios)
        rows.append(
            Row(
                NAME,
                f"training step, watch every={every}",
                statistics.median(times[every]),
                "ms",
                f"{ref}; rounds {min(ratios):.2f}-{max(ratios):.2f}x",
                r,
                target="≤ 1.3×" if every == 1 else "",
                passed=r <= 1.3 if every == 1 else None,
                note=note,
            )
        )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
