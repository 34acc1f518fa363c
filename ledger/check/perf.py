"""The performance level: step time, throughput, dataloader wait and peak memory."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from ..records.check import CheckItem
from ._tensors import call, fmt
from .spec import Spec

__all__ = ["measure", "peak_rss_bytes", "rss_bytes"]


def rss_bytes() -> int:
    """Resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def measure(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    warmup = int(settings.get("warmup", 3))
    steps = int(settings.get("steps", 10))
    repeats = int(settings.get("repeats", 3))
    n = int(settings.get("batch_size", spec.batch_size))
    torch.manual_seed(0)
    model = spec.model()
    opt = spec.optimizer([p for p in model.parameters() if p.requires_grad])
    model.train()

    def step() -> tuple[float, float]:
        t0 = time.perf_counter()
        inputs, target = spec.batch(n)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        spec.loss(call(model, inputs), target).backward()
        opt.step()
        return t1 - t0, time.perf_counter() - t0

    try:
        for _ in range(warmup):
            step()
        rss0 = rss_bytes()
        per_repeat: list[float] = []
        load = total = 0.0
        for _ in range(repeats):
            times = [step() for _ in range(steps)]
            load += sum(t[0] for t in times)
            total += sum(t[1] for t in times)
            per_repeat.append(sum(t[1] for t in times) / steps)
    except Exception as e:
        return [
            CheckItem(level="performance", name="step time", passed=False, figure=f"raised {e!r}")
        ]
    median = statistics.median(per_repeat)
    spread = (max(per_repeat) - min(per_repeat)) / median if median > 0 else 0.0
    samples = n / median if median > 0 else 0.0
    detail: dict[str, Any] = {
        "step_seconds": per_repeat,
        "median_step_seconds": median,
        "spread": spread,
        "samples_per_s": samples,
        "dataloader_fraction": load / total if total else 0.0,
        "peak_rss_bytes": peak_rss_bytes(),
        "rss_growth_bytes": rss_bytes() - rss0,
        "warmup_steps": warmup,
        "batch_size": n,
    }
    rate = f"{fmt(samples)} samples/s"
    if spec.tokens_per_sample:
        detail["tokens_per_s"] = samples * spec.tokens_per_sample
        rate += f", {fmt(samples * spec.tokens_per_sample)} tokens/s"
    figure = (
        f"step {fmt(median * 1e3)} ms (spread {spread:.0%} over {repeats}x{steps}, "
        f"{warmup} warm-up), {rate}, dataloader {detail['dataloader_fraction']:.0%}, "
        f"peak RSS {peak_rss_bytes() / 2**20:.0f} MiB"
    )
    passed = True
    limits = []
    if "max_step_ms" in settings and median * 1e3 > float(settings["max_step_ms"]):
        passed = False
        limits.append(f"step > {settings['max_step_ms']} ms")
    if "min_samples_per_s" in settings and samples < float(settings["min_samples_per_s"]):
        passed = False
        limits.append(f"samples/s < {settings['min_samples_per_s']}")
    if limits:
        figure += "; " + ", ".join(limits)
    return [
        CheckItem(
            level="performance", name="throughput", passed=passed, figure=figure, detail=detail
        )
    ]
