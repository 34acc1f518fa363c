"""List a run's checkpoints; export one as safetensors, a ``.pt`` state dict or a DCP folder.

Exports are verified like loads (every object hashed) and written atomically (temp, fsync,
rename), so a file at ``out`` is always a complete export.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from ..._canonical import canonical_json
from ...errors import UnknownIdError, UsageError
from ...records.base import record_from_json
from ...records.checkpoint import CheckpointShard
from ...store import Store
from ...store.atomic import fsync_dir
from .common import (
    CheckpointInfo,
    info_of,
    latest_ref,
    list_steps,
    open_store,
    read_checkpoint,
    resolve_checkpoint,
)

__all__ = ["checkpoint_runs", "export_checkpoint", "list_checkpoints"]

Format = Literal["safetensors", "pt", "dcp"]


def checkpoint_runs(store: Store | str | Path | None = None) -> list[str]:
    st = open_store(store)
    base = st.refs.root / "checkpoints"
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def list_checkpoints(
    run_id: str, *, store: Store | str | Path | None = None
) -> list[tuple[CheckpointInfo, bool]]:
    """(info, is latest) for every kept step of ``run_id`` (a run id or unique prefix)."""
    st = open_store(store)
    runs = checkpoint_runs(st)
    if run_id not in runs:
        matches = [r for r in runs if r.startswith(run_id)]
        if len(matches) != 1:
            raise UnknownIdError(
                f"no run {run_id!r} with checkpoints"
                + (f" ({len(matches)} match that prefix)" if matches else ""),
                hint="runs with checkpoints: " + (", ".join(runs[:10]) or "none"),
            )
        run_id = matches[0]
    from ...run.find import backed_ref

    latest = backed_ref(st, latest_ref(run_id))
    return [
        (info_of(read_checkpoint(st, oid), oid), oid == latest) for _, oid in list_steps(st, run_id)
    ]


def export_checkpoint(
    target: str,
    *,
    fmt: Format,
    out: str | Path,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    rank: int = 0,
) -> tuple[CheckpointInfo, Path]:
    """Write rank ``rank``'s shard of checkpoint ``target`` to ``out``: a file, or for
    ``dcp`` a ``torch.distributed.checkpoint`` directory. Sharded (DTensor) tensors are
    written whole, assembled from every rank's pieces."""
    if fmt not in ("safetensors", "pt", "dcp"):
        raise UsageError(f"unknown export format {fmt!r}", hint="use safetensors, pt or dcp")
    # torch is imported here, not with the module: listing checkpoints needs none of it.
    from .codec import decode_state
    from .reshard import read_state

    st = open_store(store)
    oid = resolve_checkpoint(st, target, run_id)
    rec = read_checkpoint(st, oid)
    if not 0 <= rank < rec.world_size:
        raise UsageError(f"rank {rank} is not in this checkpoint (world size {rec.world_size})")
    shard = record_from_json(st.get_json(rec.shards[rank].manifest), CheckpointShard)
    # DTensor entries whole (from every rank's pieces), plain ones from this rank's shard
    wanted = list(range(len(shard.tensors)))
    tensors, _exact = read_state(st, rec, oid, shard, wanted, None, False)
    skeleton = st.get_json(shard.state)
    out = Path(out)
    if fmt == "dcp":
        from .dcp import write_dcp

        write_dcp(out, decode_state(skeleton, tensors))
        return info_of(rec, oid), out
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        if fmt == "safetensors":
            _write_safetensors(tmp, shard, tensors, skeleton, oid)
        else:
            import torch

            torch.save(decode_state(skeleton, tensors), tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(out.absolute().parent)
    return info_of(rec, oid), out


def _write_safetensors(
    path: Path, shard: CheckpointShard, tensors: list[Any], skeleton: Any, oid: str
) -> None:
    from safetensors.torch import save_file

    named: dict[str, Any] = {}
    for entry, t in zip(shard.tensors, tensors, strict=True):
        if entry.key in named:
            raise UsageError(f"two tensors share the key path {entry.key!r}; export as pt")
        named[entry.key] = t
    metadata = {
        "ledger.checkpoint": oid,
        "ledger.run": shard.run_id,
        "ledger.step": str(shard.step),
        "ledger.rank": str(shard.rank),
        "ledger.state": canonical_json(skeleton).decode("utf-8"),
        "ledger.keys": json.dumps([e.key for e in shard.tensors]),
    }
    save_file(named, str(path), metadata=metadata)
