"""What a sharded save does besides writing the changed bytes; run by torchrun (gloo, CPU).

``python -m torch.distributed.run --nproc_per_node=N sharded_cost_prog.py STORE OUT``: every
rank holds four DTensors sharded on dim 0 (local pieces of 128 KiB, above ``reuse.MIN_BYTES``),
saves step 1, adds 1 to one of them and saves step 2. During the second save it counts the
collectives it issues, how often torch computed a DTensor's local box, the threads it
started, per chunk whether it was found equal to the last save by a comparison or hashed,
and the folders it fsyncs; then rank 0 broadcasts a value longer than ``collectives.SLOT``,
and every rank tries to gather one. Each rank writes what it saw to ``OUT/rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

import ledger.torch.checkpoint.io as ckpt_io
import ledger.torch.checkpoint.save as ckpt_save
import ledger.torch.checkpoint.write as ckpt_write
from ledger.store import Store
from ledger.torch.checkpoint import save_checkpoint
from ledger.torch.checkpoint.collectives import SLOT, broadcast_json, gather_json
from ledger.torch.checkpoint.common import read_checkpoint, resolve_checkpoint

COLLECTIVES = ("all_gather", "all_gather_object", "broadcast", "barrier", "gather", "all_reduce")


def main() -> None:
    store, out = Path(sys.argv[1]), Path(sys.argv[2])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    g = torch.Generator().manual_seed(0)
    full = [torch.randn(64 * world, 512, generator=g) for _ in range(4)]
    state = {f"t{i}": distribute_tensor(t, mesh, [Shard(0)]) for i, t in enumerate(full)}
    if rank == 0:
        Store.init(store)
    dist.barrier()
    save_checkpoint(state, step=1, store=store, run_id="r")
    state["t2"].to_local().add_(1.0)

    calls: dict[str, int] = {}
    compared: list[list[Any]] = []
    hashed: list[int] = []

    def counting(name: str, fn: Any) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)

        return call

    for name in COLLECTIVES:
        setattr(dist, name, counting(name, getattr(dist, name)))
    import torch.distributed.tensor._utils as dtensor_utils

    boxes = "compute_local_shape_and_global_offset"  # torch's rule for a DTensor's local box
    setattr(dtensor_utils, boxes, counting(boxes, getattr(dtensor_utils, boxes)))
    import threading

    start = threading.Thread.start
    names: list[str] = []

    def starting(t: threading.Thread) -> None:  # counted by the module of their code
        calls["thread_start"] = calls.get("thread_start", 0) + 1
        names.append(getattr(getattr(t, "_target", None), "__module__", "?"))
        start(t)

    threading.Thread.start = starting  # type: ignore[method-assign]
    reused, put = ckpt_io.reused, ckpt_write.ChunkWriter.put

    def spy_reused(objects: Any, key: str, index: int, data: Any) -> Any:
        oid = reused(objects, key, index, data)
        compared.append([key, index, oid is not None])
        return oid

    def spy_put(writer: Any, data: Any, *a: Any, **k: Any) -> Any:  # hashes the chunk
        hashed.append(len(data))
        return put(writer, data, *a, **k)

    ckpt_io.reused, ckpt_write.ChunkWriter.put = spy_reused, spy_put  # type: ignore[assignment,method-assign]
    order: list[str] = []  # rank 0's shard checks and the gather, in order
    check_shard, gather = ckpt_save._check_shard, ckpt_save.gather_json

    def spy_check(st: Any, oid: str, run: str, step: int, r: int, world: int) -> Any:
        order.append(f"check {r}")
        return check_shard(st, oid, run, step, r, world)

    def spy_gather(value: Any, group: Any = None) -> Any:
        order.append("gather")
        return gather(value, group)

    ckpt_save._check_shard, ckpt_save.gather_json = spy_check, spy_gather  # type: ignore[assignment]
    synced: list[str] = []  # folders fsynced during the save, in order
    fsync = os.fsync

    def spy_fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    os.fsync = spy_fsync
    info = save_checkpoint(state, step=2, store=store, run_id="r")
    os.fsync = fsync
    st = Store.open(store)
    rec = read_checkpoint(st, resolve_checkpoint(st, "latest", "r"))
    manifests = [str(st.objects.path_of(s.manifest).parent) for s in rec.shards]
    ckpt_io.reused, ckpt_write.ChunkWriter.put = reused, put  # type: ignore[method-assign]
    ckpt_save._check_shard, ckpt_save.gather_json = check_shard, gather  # type: ignore[assignment]
    save_calls = dict(calls)
    boxes_computed = save_calls.pop(boxes, 0)
    threads_started = save_calls.pop("thread_start", 0)
    calls.clear()
    # A verdict longer than one slot (a long error message, say): a second round.
    longer = broadcast_json({"rank": 0, "pad": "é" * 3000} if rank == 0 else None)
    long_calls = dict(calls)
    calls.clear()
    # A report longer than a slot is refused before any collective (no rank is left waiting).
    try:
        gather_json({"rank": rank, "pad": "x" * SLOT})
        refused = ""
    except ValueError as e:
        refused = str(e)
    report = {
        "calls": save_calls,
        "boxes_computed": boxes_computed,
        "threads_started": threads_started,
        "threads_of": names,
        "long_calls": long_calls,
        "long": [longer["rank"], len(longer["pad"])],
        "refused": refused,
        "refused_calls": calls,
        "compared": sorted(compared),
        "hashed": hashed,
        "bytes_new": info.bytes_new,
        "synced": synced,
        "manifest_folders": manifests,
        "order": order,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(report))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
