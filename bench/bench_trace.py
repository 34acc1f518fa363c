"""Training-step overhead of ``ledger.torch.trace`` on a small transformer (every=1, every=100),
and the bytes a traced step stores."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench import Row

NAME = "trace"

CONFIGS: tuple[int | None, ...] = (None, 1, 100)  # None: no trace (the reference)
V, D, T, B = 256, 128, 64, 16


def _trainer(every: int | None) -> tuple[Any, Any, int]:
    """A step function for one configuration, its trace, and the model's parameter count."""
    import torch
    from torch import nn

    from ledger.runtime import RankInfo, Run
    from ledger.torch import trace

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.1, batch_first=True)
    model = nn.Sequential(nn.Embedding(V, D), nn.TransformerEncoder(layer, 2), nn.Linear(D, V))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seq = torch.randint(0, V, (B, T + 1))
    tr = trace(model, opt, every=every, run=Run(rank=RankInfo())) if every else None

    def step() -> None:
        logits = model(seq[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
        if tr is not None:
            tr.loss(loss)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        opt.zero_grad()

    return step, tr, sum(p.numel() for p in model.parameters())


Times = dict[int | None, list[float]]


def bench_trace(steps: int, rounds: int) -> tuple[Times, Times, Any, int]:
    """Ms per step (wall, and CPU time of the process) of each configuration in each round, the
    order rotating from round to round (as bench_watch does), so a burst of load on the shared
    machine hits neighbours alike."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainers = {every: _trainer(every) for every in CONFIGS}
        for step, _, _ in trainers.values():
            for _ in range(3):
                step()
        times: Times = {every: [] for every in CONFIGS}
        cpu: Times = {every: [] for every in CONFIGS}
        order = list(CONFIGS)
        for r in range(rounds):
            for every in order[r % len(order) :] + order[: r % len(order)]:
                step = trainers[every][0]
                t, c = time.perf_counter(), time.process_time()
                for _ in range(steps):
                    step()
                times[every].append((time.perf_counter() - t) / steps * 1e3)
                cpu[every].append((time.process_time() - c) / steps * 1e3)
    finally:
        torch.set_num_threads(threads)
    return times, cpu, trainers[1][1], trainers[None][2]


def stored_bytes(tr: Any) -> tuple[float, float]:
    """Bytes per traced step as the trace file holds it (a JSON line) and zstd-compressed as
    the store keeps the trace object (one object for all steps)."""
    import zstandard

    steps = tr.records[1:]
    lines = b"".join(
        json.dumps(s, sort_keys=True, separators=(",", ":")).encode() + b"\n" for s in steps
    )
    packed = zstandard.ZstdCompressor(level=3).compress(lines)
    return len(lines) / len(steps), len(packed) / len(steps)


def run(quick: bool) -> list[Row]:
    import statistics

    # Short blocks, many rounds: on a shared machine neighbours in time see the same load.
    steps = 3 if quick else 4
    rounds = 6 if quick else 40
    times, cpu, traced, params = bench_trace(steps, rounds)
    note = (
        f"AdamW step of a {params:,}-parameter transformer (2 encoder layers, d={D}, {B}×{T} "
        f"tokens) on CPU, one torch thread; {rounds} rounds of {steps} steps per "
        "configuration, the order rotating; value: median ms per step; ratio: median over "
        "rounds of the round's ms over the same round's no-trace ms"
    )
    cpu_note = (
        "CPU time: of the process (one torch thread), the steadier figure on a loaded machine, "
        "where a step's wall time includes waiting for a core; the targets are judged on it"
    )
    rows: list[Row] = []
    for kind, data in (("", times), (", CPU time", cpu)):
        base = statistics.median(data[None])
        rows.append(Row(NAME, f"training step, no trace{kind}", base, "ms", note=note))
        for every, target in ((1, 1.3), (100, 1.02)):
            ratios = [a / b for a, b in zip(data[every], data[None], strict=True)]
            r = statistics.median(ratios)
            judged = bool(kind)
            rows.append(
                Row(
                    NAME,
                    f"training step, trace every={every}{kind}",
                    statistics.median(data[every]),
                    "ms",
                    f"no trace {base:.1f} ms; rounds {min(ratios):.2f}-{max(ratios):.2f}x",
                    r,
                    target=f"≤ {target}×" if judged else "",
                    passed=r <= target if judged else None,
                    note=cpu_note if judged else note,
                )
            )
    line, packed = stored_bytes(traced)
    modules = len(traced.header["modules"])
    tensors = len(traced.params)
    what = f"{modules} modules, {tensors} parameters"
    rows.append(Row(NAME, f"stored per traced step, JSON line ({what})", line / 1024, "KiB"))
    rows.append(Row(NAME, "stored per traced step, zstd as in the store", packed / 1024, "KiB"))
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
