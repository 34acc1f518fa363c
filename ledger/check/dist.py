"""The distributed level: torchrun with 2 gloo ranks on CPU against one process.

* gradients: each rank takes its half of one global batch; the all-reduced mean of their
  gradients must equal one process's gradient on the whole batch (dtype-aware tolerance);
* accumulation: k micro-batches of b, loss divided by k, must give the gradient of one batch
  of k*b (checked in this process);
* sampler: ``DistributedSampler`` shards of the data are disjoint and cover it;
* seeds: ``ledger.seed`` gives each rank a different torch seed.

The ranks run as ``python -m torch.distributed.run ... -m ledger.check.dist SPEC OUT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..records.check import CheckItem

__all__ = ["distributed_checks"]


def _grads(model: Any) -> list[Any]:
    import torch

    return [
        p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
        for p in model.parameters()
        if p.requires_grad
    ]


def _max_rel(a: list[Any], b: list[Any]) -> float:
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        scale = float(y.abs().max()) if y.numel() else 0.0
        worst = max(worst, float((x - y).abs().max()) / (scale + 1e-12) if x.numel() else 0.0)
    return worst


def _rank_main(source: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    from ..runtime.seeds import seed
    from ._tensors import as_tuple, call
    from .spec import load_spec

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    spec = load_spec(source).spec
    n = spec.batch_size * world
    inputs, target = spec.batch(n)
    torch.manual_seed(0)
    model = spec.model()
    model.train()
    lo, hi = rank * n // world, (rank + 1) * n // world
    part = tuple(t[lo:hi] for t in as_tuple(inputs))
    spec.loss(call(model, part), target[lo:hi]).backward()
    grads = _grads(model)
    for g in grads:
        dist.all_reduce(g)
        g /= world
    data: Any = range(10 * world)
    sampler: Any = DistributedSampler(data, num_replicas=world, rank=rank, seed=0)
    mine = list(sampler)
    shards: list[Any] = [None] * world
    dist.all_gather_object(shards, mine)
    seeds = seed(0, torch=True)
    torch_seeds: list[Any] = [None] * world
    dist.all_gather_object(torch_seeds, torch.initial_seed())
    del seeds
    if rank == 0:
        torch.manual_seed(0)
        single = spec.model()
        single.train()
        spec.loss(call(single, inputs), target).backward()
        ref = _grads(single)
        result = {
            "world": world,
            "max_rel_diff": _max_rel(grads, ref),
            "shards": shards,
            "data": 10 * world,
            "torch_seeds": torch_seeds,
        }
        Path(out).write_text(json.dumps(result), encoding="utf-8")
    dist.destroy_process_group()


def _accumulation(spec: Any, k: int) -> float:
    import torch

    from ._tensors import as_tuple, call

    b = spec.batch_size
    inputs, target = spec.batch(k * b)
    torch.manual_seed(0)
    model = spec.model()
    model.train()
    for i in range(k):
        part = tuple(t[i * b : (i + 1) * b] for t in as_tuple(inputs))
        (spec.loss(call(model, part), target[i * b : (i + 1) * b]) / k).backward()
    acc = _grads(model)
    torch.manual_seed(0)
    whole = spec.model()
    whole.train()
    spec.loss(call(whole, inputs), target).backward()
    return _max_rel(acc, _grads(whole))


def distributed_checks(spec: Any, settings: dict[str, Any]) -> list[CheckItem]:
    source = settings.get("_source")
    rtol = float(settings.get("rtol", 1e-4))
    world = int(settings.get("world_size", 2))
    items: list[CheckItem] = []
    try:
        rel = _accumulation(spec, int(settings.get("accumulation", 4)))
        items.append(
            CheckItem(
                level="distributed",
                name="gradient accumulation",
                passed=rel <= rtol,
                figure=f"4 micro-batches vs one batch: max relative gradient difference "
                f"{rel:.2e} (tolerance {rtol:g})",
                detail={"max_rel_diff": rel},
            )
        )
    except Exception as e:
        items.append(
            CheckItem(
                level="distributed",
                name="gradient accumulation",
                passed=False,
                figure=f"raised {type(e).__name__}: {e}",
            )
        )
    with tempfile.TemporaryDirectory(prefix="ledger-dist-") as tmp:
        out = Path(tmp) / "dist.json"
        env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_RUN_ID", "LEDGER_DIR")}
        here = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        env["LEDGER_RUN_DIR"] = tmp  # ledger.seed records its seeds here, not in a run
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={world}",
            "-m",
            "ledger.check.dist",
            str(source),
            str(out),
        ]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=300)
        if p.returncode != 0 or not out.is_file():
            tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            items.append(
                CheckItem(
                    level="distributed",
                    name="ranks",
                    passed=False,
                    figure=f"torchrun failed: {tail[:300]}",
                    detail={"stderr": p.stderr[-4000:]},
                )
            )
            return items
        r = json.loads(out.read_text(encoding="utf-8"))
    rel = r["max_rel_diff"]
    items.append(
        CheckItem(
            level="distributed",
            name=f"{world} ranks vs 1 process",
            passed=rel <= rtol,
            figure=f"same global batch: max relative gradient difference {rel:.2e} "
            f"(tolerance {rtol:g})",
            detail={"max_rel_diff": rel},
        )
    )
    flat = [i for s in r["shards"] for i in s]
    disjoint, covers = len(flat) == len(set(flat)), set(flat) == set(range(r["data"]))
    items.append(
        CheckItem(
            level="distributed",
            name="sampler shards",
            passed=disjoint and covers,
            figure=f"{world} shards of {r['data']} samples: "
            f"{'disjoint' if disjoint else 'OVERLAP'}, "
            f"{'cover' if covers else 'do NOT cover'} the data",
            detail={"shards": r["shards"]},
        )
    )
    seeds = r["torch_seeds"]
    items.append(
        CheckItem(
            level="distributed",
            name="per-rank seeds",
            passed=len(set(seeds)) == len(seeds),
            figure=f"torch seeds per rank after ledger.seed(0): {seeds}",
            detail={"seeds": seeds},
        )
    )
    return items


if __name__ == "__main__":
    _rank_main(sys.argv[1], sys.argv[2])
