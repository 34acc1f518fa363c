"""Stored ``checkpoint`` records, compared rank by rank and tensor by tensor.

Checkpoints are content addressed per chunk, so a tensor whose chunk ids are equal in both is
identical without reading a byte; only differing tensors are read (verified, no pickle) and
compared like any other tensor. The JSON skeleton (counters, scheduler, sampler cursor) and the
RNG states are compared as data. Run ids, creation times and dedup counts are ignored: they
always differ between a run and its replay.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import IntegrityError, UsageError
from ...records.base import record_from_json
from ...records.checkpoint import Checkpoint, CheckpointShard, TensorEntry
from ...records.verdict_parts import (
    CompareSettings,
    Difference,
    FileComparison,
    FileStatus,
)
from ...store import Store
from ._common import ValueTally
from .structured import walk

if TYPE_CHECKING:  # numpy comes with it: imported where two tensors are compared
    from .tensors import TensorData

__all__ = ["compare_checkpoint_steps", "compare_checkpoints"]


def _record(store: Store, oid: str, cls: type[Checkpoint] | type[CheckpointShard]) -> Any:
    return record_from_json(store.get_json(oid), cls)


def _read(store: Store, entry: TensorEntry, chunk_size: int) -> TensorData:
    from ...torch.checkpoint.io import read_tensors  # verified reads; torch only when needed
    from .tensors import tensor_from_torch

    return tensor_from_torch(read_tensors(store.objects, [entry], chunk_size)[0])


def _skeleton(store: Store, shard: CheckpointShard) -> Any:
    """The non-tensor state as Python values (tensors as None), so paths read "state.epoch"."""
    from ...torch.checkpoint.codec import decode_state

    placeholders: list[Any] = [None] * len(shard.tensors)
    return decode_state(store.get_json(shard.state), placeholders)


def _names(key: str, prefix: str) -> list[str]:
    leaf = key.rsplit("/", 1)[-1]
    return [prefix + key, key, leaf, leaf.rsplit(".", 1)[-1]]


def _compare_shard(
    store: Store, a: CheckpointShard, b: CheckpointShard, prefix: str, tally: ValueTally
) -> None:
    ea = {e.key: e for e in a.tensors}
    eb = {e.key: e for e in b.tensors}
    for key in [*ea, *(k for k in eb if k not in ea)]:
        x, y = ea.get(key), eb.get(key)
        if x is None or y is None:
            tally.structural(prefix + key, "original" if x is not None else "replay")
            continue
        if (x.dtype, x.shape, x.chunks) == (y.dtype, y.shape, y.chunks):
            tally.total += math.prod(x.shape)
            continue
        from .tensors import compare_tensor_pair

        names = _names(key, prefix)
        compare_tensor_pair(
            prefix + key, _read(store, x, a.chunk_size), _read(store, y, b.chunk_size), tally, names
        )
    if a.state != b.state:
        walk(tally, _skeleton(store, a), _skeleton(store, b), f"{prefix}state")
    rng_a = a.rng.model_dump(mode="json") if a.rng else None
    rng_b = b.rng.model_dump(mode="json") if b.rng else None
    if rng_a != rng_b:
        walk(tally, rng_a, rng_b, f"{prefix}rng")


def compare_checkpoints(
    store: Store,
    original: str,
    replay: str,
    settings: CompareSettings | None = None,
    *,
    name: str | None = None,
) -> FileComparison:
    """Compare two ``checkpoint`` records by id; keys are "rank<r>/<key>" when world size > 1."""
    settings = settings or CompareSettings()
    tally = ValueTally(settings, unit="elements")
    try:
        ca: Checkpoint = _record(store, original, Checkpoint)
        cb: Checkpoint = _record(store, replay, Checkpoint)
        label = name or f"checkpoint step {ca.step}"
        if ca.world_size != cb.world_size:
            return FileComparison(
                path=label,
                comparator="checkpoint",
                status="different",
                mismatches=1,
                total=1,
                unit="checkpoints",
                first_difference=Difference(
                    kind="structure",
                    description=f"saved by {ca.world_size} vs {cb.world_size} ranks",
                    key="world_size",
                    original=str(ca.world_size),
                    replay=str(cb.world_size),
                ),
            )
        tally.value("step", ca.step, cb.step, ["step"])
        for sa, sb in zip(ca.shards, cb.shards, strict=True):
            prefix = f"rank{sa.rank}/" if ca.world_size > 1 else ""
            shard_a: CheckpointShard = _record(store, sa.manifest, CheckpointShard)
            shard_b: CheckpointShard = _record(store, sb.manifest, CheckpointShard)
            _compare_shard(store, shard_a, shard_b, prefix, tally)
    except (IntegrityError, UsageError) as e:
        return FileComparison(
            path=name or "checkpoint",
            comparator="checkpoint",
            status="not-comparable",
            reason=str(e),
        )
    return tally.result(label, "checkpoint")


def compare_checkpoint_steps(
    store: Store,
    original: Mapping[int, str],
    replay: Mapping[int, str],
    settings: CompareSettings | None = None,
) -> list[FileComparison]:
    """Pair two runs' checkpoints by step (step -> checkpoint id) and compare each pair."""
    out: list[FileComparison] = []
    for step in sorted(original.keys() | replay.keys()):
        label = f"checkpoint step {step}"
        a, b = original.get(step), replay.get(step)
        if a is None or b is None:
            status: FileStatus = "missing-in-original" if a is None else "missing-in-replay"
            out.append(FileComparison(path=label, comparator="checkpoint", status=status))
        else:
            out.append(compare_checkpoints(store, a, b, settings, name=label))
    return out
