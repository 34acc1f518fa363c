"""The cost of ``ledger gate`` itself on a ~10M-parameter model, check group by check group."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench import Row

NAME = "gate"


def _model() -> Any:
    from torch import nn

    # 512 -> 2048 -> 2048 -> 2048 -> 512: 10.5M parameters.
    return nn.Sequential(
        nn.Linear(512, 2048),
        nn.GELU(),
        nn.Linear(2048, 2048),
        nn.GELU(),
        nn.Linear(2048, 2048),
        nn.GELU(),
        nn.Linear(2048, 512),
    )


def _batch(n: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(n)
    return torch.randn(n, 512, generator=g), torch.randn(n, 512, generator=g)


def spec() -> Any:
    import torch

    from ledger.check import Spec

    return Spec(
        model=_model,
        batch=_batch,
        loss=torch.nn.functional.mse_loss,
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-3),
    )


def run(quick: bool) -> list[Row]:
    import torch

    from ledger.gate import GATE_CHECKS, run_gate

    torch.manual_seed(0)
    model = _model().eval()
    params = sum(p.numel() for p in model.parameters())
    x = _batch(64)[0]
    with torch.no_grad():
        for _ in range(3):
            model(x)
        t = time.perf_counter()
        for _ in range(10):
            model(x)
        forward = (time.perf_counter() - t) / 10
    rows = [Row(NAME, "eager forward, batch 64 (reference)", forward * 1e3, "ms")]
    with tempfile.TemporaryDirectory() as tmp:
        weights = Path(tmp) / "w.pt"
        torch.save(model.state_dict(), weights)
        total = 0.0
        for check in GATE_CHECKS:
            t = time.perf_counter()
            result = run_gate(str(weights), "bench.bench_gate:spec", checks=[check])
            seconds = time.perf_counter() - t
            total += seconds
            ok = sum(i.passed is True for i in result.record.items)
            rows.append(
                Row(
                    NAME,
                    f"{check} ({ok}/{len(result.record.items)} passed)",
                    seconds,
                    "s",
                    reference=f"eager forward {forward * 1e3:.1f} ms",
                    ratio=seconds / forward,
                    note=f"{params:,}-parameter MLP; weights loaded from a .pt file each time; "
                    "no input guard, so NaN/Inf poison inputs fail as they should",
                )
            )
        rows.append(
            Row(
                NAME,
                "whole gate (sum)",
                total,
                "s",
                ratio=total / forward,
                reference=f"eager forward {forward * 1e3:.1f} ms",
            )
        )
    return rows
