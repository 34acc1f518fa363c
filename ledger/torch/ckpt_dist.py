"""The few collectives a sharded save needs, carrying JSON (never pickle) in uint8 tensors.

``torch.distributed.gather_object`` unpickles what other ranks send; here every rank sends
canonical JSON bytes, gathered with ``all_gather`` on tensors and parsed with a strict parser.
"""

from __future__ import annotations

from typing import Any

import torch

from .._canonical import canonical_json, parse_json

__all__ = ["all_gather_json", "barrier", "rank_and_world"]


def _dist_ready() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized())


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the default process group; (0, 1) outside torch.distributed."""
    if not _dist_ready():
        return 0, 1
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def _device() -> torch.device:
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_gather_json(value: Any) -> list[Any]:
    """Every rank's ``value`` (JSON types), in rank order."""
    _, world = rank_and_world()
    if world == 1:
        return [parse_json(canonical_json(value))]
    import torch.distributed as dist

    dev = _device()
    data = canonical_json(value)
    size = torch.tensor([len(data)], dtype=torch.int64, device=dev)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    longest = max(int(s.item()) for s in sizes)
    buf = torch.zeros(longest, dtype=torch.uint8)
    if data:
        buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    buf = buf.to(dev)
    bufs = [torch.zeros(longest, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.all_gather(bufs, buf)
    out = []
    for b, s in zip(bufs, sizes, strict=True):
        out.append(parse_json(b[: int(s.item())].cpu().numpy().tobytes()))
    return out


def barrier() -> None:
    if _dist_ready():
        import torch.distributed as dist

        dist.barrier()
