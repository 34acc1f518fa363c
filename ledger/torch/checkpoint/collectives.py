"""The few collectives a sharded save needs, carrying JSON (never pickle) in uint8 tensors.

``torch.distributed.gather_object`` unpickles what other ranks send; here every rank sends
canonical JSON bytes in uint8 tensors, gathered on rank 0 (``gather``) or sent from it
(``broadcast``), and parsed with a strict parser.
"""

from __future__ import annotations

from typing import Any

import torch

from ..._canonical import canonical_json, parse_json

__all__ = [
    "ROOM",
    "SLOT",
    "background_group",
    "barrier",
    "broadcast_json",
    "gather_json",
    "rank_and_world",
]

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


# Bytes each rank sends in the one ``gather`` of ``gather_json`` (and rank 0 in the first
# ``broadcast`` of ``broadcast_json``): an 8-byte length, then the JSON. A save's reports and
# verdict are a few hundred bytes.
SLOT = 4096
_HEAD = 8
ROOM = SLOT - _HEAD  # bytes of JSON one slot holds


def _slot(data: bytes) -> torch.Tensor:
    head = len(data).to_bytes(_HEAD, "little") + data[: SLOT - _HEAD]
    slot = torch.zeros(SLOT, dtype=torch.uint8)
    slot[: len(head)] = torch.frombuffer(bytearray(head), dtype=torch.uint8)
    return slot


def _unslot(slot: torch.Tensor) -> tuple[int, bytes]:
    got = slot.cpu().numpy().tobytes()
    size = int.from_bytes(got[:_HEAD], "little")
    return size, got[_HEAD : _HEAD + min(size, SLOT - _HEAD)]


def gather_json(value: Any, group: Any = None) -> list[Any] | None:
    """Every rank's ``value`` (JSON types) on rank 0, in rank order; None on the other ranks.

    One ``gather`` of ``SLOT`` bytes per rank: each rank sends straight to rank 0, where a
    ring ``all_gather`` passes every slot along ``world - 1`` hops, each a wake-up of a rank
    that costs milliseconds on a busy machine (a save's reports are needed by rank 0 only).
    The value's JSON must fit the slot (``ROOM`` bytes): a rank cannot tell the others
    that a second round is needed, so a longer value is refused (``ValueError``) before the
    collective; the caller fits its values (``save`` cuts a long error message).
    """
    rank, world = rank_and_world()
    data = canonical_json(value)
    if len(data) > ROOM:
        raise ValueError(f"a value of {len(data)} bytes does not fit a {SLOT}-byte slot")
    if world == 1:
        return [parse_json(data)]
    import torch.distributed as dist

    dev = _device(group)
    slots = [torch.zeros(SLOT, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.gather(_slot(data).to(dev), slots if rank == 0 else None, dst=0, group=group)
    if rank != 0:
        return None
    return [parse_json(_unslot(s)[1]) for s in slots]


def broadcast_json(value: Any, group: Any = None) -> Any:
    """Rank 0's ``value`` (JSON types) on every rank (the others pass anything, e.g. None).

    One ``broadcast`` of ``SLOT`` bytes holding the length and as much of the JSON as fits;
    only a longer value (a long error message) takes a second ``broadcast`` for the rest,
    which every rank knows of from the length.
    """
    rank, world = rank_and_world()
    if world == 1:
        return parse_json(canonical_json(value))
    import torch.distributed as dist

    dev = _device(group)
    data = canonical_json(value) if rank == 0 else b""
    slot = _slot(data).to(dev)
    dist.broadcast(slot, src=0, group=group)
    size, part = _unslot(slot)
    rest = size - (SLOT - _HEAD)
    if rest > 0:  # every rank takes this branch: each knows the length
        buf = torch.zeros(rest, dtype=torch.uint8)
        if rank == 0:
            buf[:] = torch.frombuffer(bytearray(data[SLOT - _HEAD :]), dtype=torch.uint8)
        buf = buf.to(dev)
        dist.broadcast(buf, src=0, group=group)
        part += buf.cpu().numpy().tobytes()
    return parse_json(part)


def barrier() -> None:
    if _dist_ready():
        import torch.distributed as dist

        dist.barrier()
