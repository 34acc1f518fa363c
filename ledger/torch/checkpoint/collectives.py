"""The few collectives a sharded save needs, carrying JSON (never pickle) in uint8 tensors.

``torch.distributed.gather_object`` unpickles what other ranks send; here every rank sends
canonical JSON bytes, gathered with ``all_gather`` on tensors and parsed with a strict parser.
"""

from __future__ import annotations

from typing import Any

import torch

from ..._canonical import canonical_json, parse_json

__all__ = ["SLOT", "all_gather_json", "background_group", "barrier", "rank_and_world"]

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


# Bytes each rank sends in the one ``all_gather`` of ``all_gather_json``: an 8-byte length,
# then the JSON. A save's reports and verdict are a few hundred bytes; a longer value (a long
# error message) costs one more round, for the rest.
SLOT = 4096
_HEAD = 8


def all_gather_json(value: Any, group: Any = None) -> list[Any]:
    """Every rank's ``value`` (JSON types), in rank order, over ``group`` (default: world).

    One ``all_gather`` of ``SLOT`` bytes per rank, each slot holding its length and as much of
    the JSON as fits: a save exchanges twice (reports, verdict), and each round trip of gloo
    costs milliseconds on a busy machine (wake-ups of every rank), where a first round of
    sizes and a second of data cost two. Only when some rank's JSON is longer than the slot
    does a second ``all_gather`` carry the rest (every rank knows every length by then).
    """
    _, world = rank_and_world()
    if world == 1:
        return [parse_json(canonical_json(value))]
    import torch.distributed as dist

    dev = _device(group)
    data = canonical_json(value)
    head = len(data).to_bytes(_HEAD, "little") + data[: SLOT - _HEAD]
    slot = torch.zeros(SLOT, dtype=torch.uint8)
    slot[: len(head)] = torch.frombuffer(bytearray(head), dtype=torch.uint8)
    slots = [torch.zeros(SLOT, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.all_gather(slots, slot.to(dev), group=group)
    got = [s.cpu().numpy().tobytes() for s in slots]
    sizes = [int.from_bytes(g[:_HEAD], "little") for g in got]
    parts = [g[_HEAD : _HEAD + min(n, SLOT - _HEAD)] for g, n in zip(got, sizes, strict=True)]
    rest = max(n - (SLOT - _HEAD) for n in sizes)
    if rest > 0:  # every rank takes this branch: each knows every length
        tail = data[SLOT - _HEAD :]
        buf = torch.zeros(rest, dtype=torch.uint8)
        if tail:
            buf[: len(tail)] = torch.frombuffer(bytearray(tail), dtype=torch.uint8)
        bufs = [torch.zeros(rest, dtype=torch.uint8, device=dev) for _ in range(world)]
        dist.all_gather(bufs, buf.to(dev), group=group)
        for i, (b, n) in enumerate(zip(bufs, sizes, strict=True)):
            parts[i] += b[: max(0, n - (SLOT - _HEAD))].cpu().numpy().tobytes()
    return [parse_json(p) for p in parts]


def barrier() -> None:
    if _dist_ready():
        import torch.distributed as dist

        dist.barrier()
