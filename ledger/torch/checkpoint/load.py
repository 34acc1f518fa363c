"""``load_checkpoint``: verified, pickle-free loading as an exact resume or a warm start.

Every object is hashed before its bytes are used, and nothing is applied to the caller's
objects until every tensor of the shard has been read and verified, so a damaged checkpoint
raises (naming the tensor and the object) and leaves the model as it was.
RNG states are restored last, after every ``load_state_dict``, so nothing consumes them.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from ...errors import IntegrityError, UsageError
from ...records.base import record_from_json
from ...records.checkpoint import CheckpointShard, TensorEntry
from ...runtime.rng import restore_rng
from ...store import Store
from .codec import decode_state, is_stateful
from .collectives import rank_and_world
from .common import (
    CheckpointInfo,
    info_of,
    open_store,
    read_checkpoint,
    resolve_checkpoint,
    write_event,
)
from .reshard import read_state
from .save import save_checkpoint

__all__ = ["LoadedCheckpoint", "import_legacy", "load_checkpoint"]

Mode = Literal["resume", "warm-start"]


@dataclass
class LoadedCheckpoint:
    """The loaded state of this rank; stateful entries hold their state dicts."""

    info: CheckpointInfo
    mode: Mode
    state: dict[str, Any]
    shard_rank: int
    rng_restored: list[str] = field(default_factory=list)
    # True for a resume that read only this rank's own saved pieces, at the same world size:
    # training continues bitwise. False after a reshard (another world size or layout): a
    # warm continuation, since reductions then add in another order; RNG states are left alone.
    exact: bool = False


def load_checkpoint(
    target: str | int = "latest",
    *,
    state: dict[str, Any] | None = None,
    run_id: str | None = None,
    store: Store | str | Path | None = None,
    mode: Mode = "resume",
    strict: bool = True,
    source: str | os.PathLike[str] | None = None,
) -> LoadedCheckpoint:
    """Load checkpoint ``target`` (``latest``, a step, a ref or an id) of ``run_id``.

    ``mode="resume"`` restores everything into ``state`` (a dict shaped like the saved one:
    stateful objects get ``load_state_dict``, plain values are replaced) and then this rank's
    RNG states; it needs the same world size, except for a checkpoint of DTensor (FSDP2)
    state, which reshards to any world size and to the placements of the DTensors in
    ``state`` (``exact`` is then False: a warm continuation, RNG states not restored).
    ``mode="warm-start"`` loads only the weights of the ``nn.Module`` entries of ``state`` and
    leaves optimizer, counters and RNG alone.
    ``source``: the small file the program named to find ``target`` (a pointer): stored with
    the load event, so that ``ledger replay`` rebuilds it where the workspace lacks it.
    """
    t0 = time.perf_counter()
    if mode not in ("resume", "warm-start"):
        raise UsageError(f"mode must be 'resume' or 'warm-start', got {mode!r}")
    st = open_store(store)
    oid = resolve_checkpoint(st, target, run_id)
    rec = read_checkpoint(st, oid)
    rank, world = rank_and_world()
    same = rec.world_size == world
    shard_rank = rank if same else 0
    shard = record_from_json(st.get_json(rec.shards[shard_rank].manifest), CheckpointShard)
    if (shard.step, shard.rank) != (rec.step, shard_rank):
        raise IntegrityError(f"checkpoint {oid}: shard {shard_rank} does not match its record")
    sharded = any(e.layout is not None for e in shard.tensors)
    if mode == "resume" and not same and not sharded:
        raise UsageError(
            f"checkpoint {oid[:15]}… was saved by {rec.world_size} rank(s); this job has {world}",
            hint="resume with the same world size, or load weights with mode='warm-start' "
            "(checkpoints of DTensor/FSDP2 state reshard to any world size)",
        )
    skeleton = st.get_json(shard.state)
    wanted = _wanted(shard.tensors, state, mode)
    tensors, exact = read_state(st, rec, oid, shard, wanted, state, same)
    decoded = decode_state(skeleton, tensors)
    if state is not None:
        _apply(state, decoded, mode, strict, "")
    restored: list[str] = []
    if mode == "resume" and exact and shard.rng is not None:
        restored = restore_rng(shard.rng, strict=False)  # last: nothing may draw after it
    if rank == 0:
        write_event(
            {
                "event": "load",
                "checkpoint": oid,
                "run_id": rec.run_id,
                "step": rec.step,
                "mode": mode,
                **({"continuation": "exact" if exact else "warm"} if mode == "resume" else {}),
                "rank": rank,
                "world_size": world,
                "saved_world_size": rec.world_size,
                **_source(st, source),
            }
        )
    info = info_of(rec, oid, seconds=time.perf_counter() - t0)
    if mode == "resume":
        from ..localize_pass import start_if_asked

        start_if_asked(state)  # a pass of `ledger replay --localize` traces from here
    return LoadedCheckpoint(info, mode, decoded, shard_rank, restored, mode == "resume" and exact)


_SOURCE_MAX = 64 * 1024  # a pointer is a few hundred bytes; anything larger is not one


def _source(store: Store, source: str | os.PathLike[str] | None) -> dict[str, str]:
    """``source`` and ``source_digest`` of a load event: the file as the program named it, and
    its bytes put in the store. Nothing for a file that is not small and regular."""
    if source is None:
        return {}
    path = os.fspath(source)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _SOURCE_MAX:
            return {}
        with open(path, "rb") as f:
            data = f.read(_SOURCE_MAX + 1)
    except OSError:
        return {}
    if len(data) > _SOURCE_MAX:
        return {}
    return {"source": path, "source_digest": store.objects.put_bytes(data)}


def _wanted(entries: list[TensorEntry], state: dict[str, Any] | None, mode: Mode) -> list[int]:
    """Indices of tensors to read: all for a resume, module weights for a warm start."""
    if mode == "resume" or state is None:
        return list(range(len(entries)))
    prefixes = [p + "/" for p in _module_paths(state, "")]
    return [i for i, e in enumerate(entries) if any(e.key.startswith(p) for p in prefixes)]


def _module_paths(value: dict[str, Any], path: str) -> list[str]:
    out = []
    for k, v in value.items():
        p = f"{path}/{k}" if path else str(k)
        if isinstance(v, torch.nn.Module):
            out.append(p)
        elif isinstance(v, dict):
            out.extend(_module_paths(v, p))
    return out


def _check_shapes(current: Any, loaded: Any, path: str) -> None:
    """Name the first tensor whose shape or dtype differs between template and checkpoint."""
    if isinstance(current, torch.Tensor) and isinstance(loaded, torch.Tensor):
        if current.shape != loaded.shape or current.dtype != loaded.dtype:
            raise UsageError(
                f"tensor {path} is {tuple(loaded.shape)} {loaded.dtype} in the checkpoint but "
                f"{tuple(current.shape)} {current.dtype} in the model",
                hint="load into the same architecture, or load with strict=False after "
                "removing that key from the checkpoint state",
            )
    elif isinstance(current, dict) and isinstance(loaded, dict):
        for k in current:  # in the model's order, so the first mismatch is named
            if k in loaded:
                _check_shapes(current[k], loaded[k], f"{path}/{k}")


def _apply(template: dict[str, Any], loaded: Any, mode: Mode, strict: bool, path: str) -> None:
    if not isinstance(loaded, dict):
        raise UsageError(f"checkpoint holds a {type(loaded).__name__} at {path or '<root>'}")
    for k, tv in template.items():
        p = f"{path}/{k}" if path else str(k)
        if k not in loaded:
            if mode == "resume" or isinstance(tv, torch.nn.Module):
                raise UsageError(
                    f"the checkpoint has no {p!r}; it has {sorted(map(str, loaded))}",
                    hint="resume with the same state layout, or use mode='warm-start'",
                )
            continue
        lv = loaded[k]
        if (isinstance(tv, torch.nn.Module) or is_stateful(tv)) and not isinstance(lv, dict):
            # torch would raise a TypeError (or worse, for optimizers) at load_state_dict
            raise UsageError(
                f"cannot load {p}: the checkpoint holds no state dict there",
                hint="the checkpoint saved something else under that key; check the state layout",
            )
        if isinstance(tv, torch.nn.Module):
            _check_shapes(tv.state_dict(), lv, p)
            try:
                tv.load_state_dict(lv, strict=strict)
            except RuntimeError as e:
                raise UsageError(f"cannot load {p} into the model: {e}") from None
        elif is_stateful(tv):
            if mode == "resume":
                _check_shapes(tv.state_dict(), lv, p)
                tv.load_state_dict(lv)
        elif isinstance(tv, dict) and isinstance(lv, dict):
            _apply(tv, lv, mode, strict, p)
        elif mode == "resume":
            template[k] = lv
    if mode == "resume":  # a resume restores everything saved, also keys the template lacks
        for k in loaded.keys() - template.keys():
            template[k] = loaded[k]


def import_legacy(
    path: str | Path,
    *,
    step: int = 0,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    key: str | None = None,
) -> CheckpointInfo:
    """Store a ``.pt`` file as a checkpoint. It is read with ``torch.load(weights_only=True)``,
    which refuses arbitrary pickled objects; the returned info says so. With ``key``, the
    file's content is stored under that key (``key="model"`` for a bare model state dict)."""
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except Exception as e:
        raise UsageError(
            f"{path} cannot be read with torch.load(weights_only=True): {e}",
            hint="it holds pickled objects beyond tensors and containers; convert it to a "
            "plain state dict in an environment you trust",
        ) from None
    wrap = key is not None or not isinstance(obj, dict)
    state = {key or "state": obj} if wrap else obj
    note = f"imported from {Path(path).name} with torch.load(weights_only=True); no RNG state"
    return save_checkpoint(state, step=step, store=store, run_id=run_id, note=note, rng=False)
