"""DTensor layouts: a sharded tensor's local piece and where it sits, and the piece a loading
rank needs.

A DTensor (FSDP2's parameters and optimizer moments, ``distribute_tensor`` layouts) is saved
as its local tensor plus a ``ShardLayout``: the whole tensor's shape, the piece's offset, the
placements and the mesh shape. Only ``Shard(d)`` and ``Replicate()`` placements are stored:
their pieces are boxes, so any rank count can cut the whole tensor again on load. ``Partial``
(a pending reduction) and strided shards are refused with the key path and what to do.

On load the *target* of a key is the DTensor the caller's own state holds there (its mesh and
placements say which box this rank needs); the moments of an optimizer whose state is still
empty take their parameter's (``param_groups`` order, as ``Optimizer.load_state_dict`` maps
them). A key without a DTensor target is loaded as the whole tensor.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import torch

from ...errors import UsageError
from ...records.checkpoint import ShardLayout
from .codec import is_stateful

__all__ = ["Box", "describe", "is_dtensor", "target_box", "targets", "wrap"]

Box = tuple[tuple[int, ...], tuple[int, ...]]  # (offset, shape)


def _dtensor_type() -> Any:
    """DTensor's class, or None while nothing has imported it: then no value can be one.

    Importing ``torch.distributed.tensor`` costs about a second (sympy, torch.fx), which a
    process that never made a DTensor would pay inside its first save; a DTensor can only exist
    once its class's module is loaded, so asking ``sys.modules`` is exact."""
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None)


def is_dtensor(value: Any) -> bool:
    cls = _dtensor_type()
    return cls is not None and isinstance(value, cls)


# Boxes computed so far, by (mesh id, whole shape, placements): (the mesh, the box). A save
# describes every DTensor of the state, and torch's rule costs about 15 us a tensor, paid while
# a background save holds training; the same parameters come back at every save. The mesh is
# held, so its id is not reused while its entry is here; a box depends on nothing else (this
# rank's place in the mesh is fixed when the mesh is made).
_boxes: dict[tuple[int, tuple[int, ...], tuple[Any, ...]], tuple[Any, Box]] = {}
_BOXES = 4096  # entries kept at most (a state with more DTensors computes the rest each time)


def _box(t: Any) -> Box:
    """This rank's box of DTensor ``t`` (torch's own rule for Shard/Replicate placements)."""
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    mesh = t.device_mesh
    key = (id(mesh), tuple(t.shape), tuple(t.placements))
    hit = _boxes.get(key)
    if hit is not None and hit[0] is mesh:
        return hit[1]
    shape, offset = compute_local_shape_and_global_offset(t.shape, mesh, t.placements)
    box = tuple(int(o) for o in offset), tuple(int(n) for n in shape)
    if len(_boxes) >= _BOXES:
        _boxes.clear()
    _boxes[key] = (mesh, box)
    return box


def _placements(t: Any, path: str) -> list[str]:
    from torch.distributed.tensor import Replicate, Shard

    out = []
    for p in t.placements:
        if type(p) is Shard:  # exactly: _StridedShard subclasses it
            out.append(f"S({p.dim})")
        elif isinstance(p, Replicate):
            out.append("R")
        else:
            raise UsageError(
                f"tensor at {path} is a DTensor placed {p}: checkpoints store Shard and "
                "Replicate placements only",
                hint="redistribute it to Shard/Replicate placements (or call .full_tensor()) "
                "before saving",
            )
    return out


def describe(t: Any, path: str) -> tuple[torch.Tensor, ShardLayout]:
    """The local tensor of DTensor ``t`` and its layout; refuses what cannot be resharded."""
    placements = _placements(t, path)
    local = t.to_local()
    offset, shape = _box(t)
    if tuple(local.shape) != shape:
        raise UsageError(
            f"tensor at {path}: its local piece is {tuple(local.shape)}, but its placements "
            f"{placements} give {shape}",
            hint="save DTensors whose local tensors follow their placements (no padding)",
        )
    layout = ShardLayout(
        shape=list(t.shape),
        offset=list(offset),
        placements=placements,
        mesh=list(t.device_mesh.shape),
    )
    return local, layout


def _key(path: str, k: Any) -> str:
    return f"{path}/{k}" if path else str(k)


def targets(state: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The DTensors of the caller's state by key path, and by key prefix the parameters of
    optimizers (``<path>/state/<i>/``) for moments not made yet."""
    exact: dict[str, Any] = {}
    prefixes: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, torch.optim.Optimizer):
            params = [p for g in value.param_groups for p in g["params"]]
            for i, p in enumerate(params):
                if is_dtensor(p):
                    prefixes[f"{path}/state/{i}/"] = p
        if is_stateful(value):
            value = value.state_dict()
        if is_dtensor(value):
            exact[path] = value
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, _key(path, k))
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, _key(path, i))

    if state is not None:
        walk(state, "")
    return exact, prefixes


def target_of(found: tuple[dict[str, Any], dict[str, Any]], key: str, shape: list[int]) -> Any:
    """The DTensor whose mesh and placements the tensor at ``key`` is loaded into, or None."""
    exact, prefixes = found
    t = exact.get(key)
    if t is None:
        cut = key.rfind("/")
        t = prefixes.get(key[: cut + 1]) if cut >= 0 else None
    if t is not None and list(t.shape) == list(shape):
        return t
    return None


def target_box(target: Any, shape: list[int]) -> Box:
    """The box this rank loads: its piece of ``target``, or the whole tensor without one."""
    if target is None:
        return (0,) * len(shape), tuple(shape)
    return _box(target)


def wrap(local: torch.Tensor, target: Any) -> Any:
    """``local`` as a DTensor placed like ``target`` (no communication, no check)."""
    if target is None:
        return local
    from torch.distributed.tensor import DTensor

    return DTensor.from_local(
        local,
        target.device_mesh,
        target.placements,
        run_check=False,
        shape=target.shape,
        stride=target.stride(),
    )


def volume(shape: tuple[int, ...] | list[int]) -> int:
    return math.prod(shape)
