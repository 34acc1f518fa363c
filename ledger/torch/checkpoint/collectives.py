"""The few collectives a sharded save needs, carrying JSON (never pickle) in uint8 tensors.

``torch.distributed.gather_object`` unpickles what other ranks send; here every rank sends
canonical JSON bytes, gathered with ``all_gather`` on tensors and parsed with a strict parser.
"""

from __future__ import annotations

from typing import Any

import torch

from ..._canonical import canonical_json, parse_json

__all__ = ["all_gather_json", "background_group", "barrier", "rank_and_world"]

# The gloo group background saves talk on, made once per default group (see background_group).
_bg_groups: dict[int, Any] = {}


def _dist_ready() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized())


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the default process group; (0, 1) outside torch.distributed."""
    if not _dist_ready():
        return 0, 1
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def _device(group: Any = None) -> torch.device:
    import torch.distributed as dist

    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def background_group() -> Any:
    """A gloo process group of every rank, for a save that runs in a background thread.

    Collectives of one group must be issued in the same order on every rank; training issues
    its own on the default group from the main thread, so a background save must not share it
    (``torch.distributed.checkpoint.async_save`` does the same). Creating a group is itself a
    collective: the first background save calls this on every rank, from the main thread.
    ``None`` outside torch.distributed.
    """
    if not _dist_ready():
        return None
    import torch.distributed as dist

    key = id(dist.group.WORLD)
    if key not in _bg_groups:
        _bg_groups.clear()  # a new default group: the old one's subgroup is gone with it
        _bg_groups[key] = dist.new_group(backend="gloo")
    return _bg_groups[key]


def all_gather_json(value: Any, group: Any = None) -> list[Any]:
    """Every rank's ``value`` (JSON types), in rank order, over ``group`` (default: world)."""
    _, world = rank_and_world()
    if world == 1:
        return [parse_json(canonical_json(value))]
    import torch.distributed as dist

    dev = _device(group)
    data = canonical_json(value)
    size = torch.tensor([len(data)], dtype=torch.int64, device=dev)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    longest = max(int(s.item()) for s in sizes)
    buf = torch.zeros(longest, dtype=torch.uint8)
    if data:
        buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    buf = buf.to(dev)
    bufs = [torch.zeros(longest, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.all_gather(bufs, buf, group=group)
    out = []
    for b, s in zip(bufs, sizes, strict=True):
        out.append(parse_json(b[: int(s.item())].cpu().numpy().tobytes()))
    return out


def barrier() -> None:
    if _dist_ready():
        import torch.distributed as dist

        dist.barrier()
