"""Sharded (DTensor) checkpoints at 4 ranks, side by side with torch.distributed.checkpoint.

torchrun (gloo, CPU) starts 4 ranks holding a state of DTensors sharded on dim 0 (``N_TENSORS``
tensors, ``TOTAL`` bytes in all). In each round, in one process group, the ranks time (from a
barrier to a barrier, so the slowest rank counts): ``save_checkpoint`` into an empty ledger and
``dcp.save`` into an empty folder; a second save with 10% of the tensors changed (ledger, same
store) against ``dcp.save`` of it; the time a background save holds training
(``background=True`` against ``dcp.async_save``); a load at the same world size (every byte
verified) against ``dcp.load``. Then 2 ranks load the 4-rank checkpoints (a reshard) with
each. Each pair (the saves as the loads) runs in an order that alternates from round to round,
each side after a ``sync``; the loads into DTensors made before the clock starts. A first round
is not timed (imports, first use). Figures are medians over the rounds; a ratio is the median
over the rounds of the round's ledger figure over its DCP figure.

Why the order alternates, and why every torchrun starts after a rest (``bench.rest``): the disk
of the machine the figures come from writes fsynced data at 0.5-0.9 GB/s for its first 0.8-1 GB,
then at 0.11-0.18 GB/s until it has been left alone a while (a host-side write budget: 160 MiB
written with ``dd conv=fsync`` took 0.19-0.35 s, then 0.95-1.48 s from the seventh file on). A
round writes about 0.7 GB. ``dcp.save`` writes all 160 MiB at each save and its time follows
the budget left; the ledger's second save writes 16 MiB and does not. So the side that ran
second in a fixed order met a more spent disk, and a torchrun that ran first, after the
machine had been idle, timed ``dcp.save`` up to twice as fast as the torchruns after it: with
the torchruns in the order now, before, before, now, this checkout's ``dcp.save`` figures
were the faster ones (300 against 441 ms on the quiet machine) and its second-save ratio the
worse one, from the position of its torchruns, not from its code.

Each torchrun runs in its work folder, not in the checkout: ``python -m`` puts its working
directory first on ``sys.path``, so run from the checkout it would import this checkout's
``ledger`` ahead of the baseline's (``LEDGER_BENCH_BASELINE``) and measure the new code twice.
Every worker reports which ``ledger`` it imported, and a run of the wrong one is refused.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import REST_SECONDS, Row, rest

NAME = "checkpoint: sharded (DTensor) at 4 ranks vs torch.distributed.checkpoint"
N_TENSORS = 20
TOTAL = 160 << 20
ROOT = Path(__file__).resolve().parent.parent


def _worker(mode: str, work: Path, rounds: int, total: int) -> None:  # runs under torchrun
    import warnings

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    from ledger.store import Store
    from ledger.torch.checkpoint import load_checkpoint, save_checkpoint, wait_for_checkpoints

    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    rows = max(world * 4, total // 4 // N_TENSORS // 1024)
    g = torch.Generator().manual_seed(0)
    full = [torch.randn(rows, 1024, generator=g) for _ in range(N_TENSORS)]

    def state() -> dict[str, Any]:
        return {f"t{i}": distribute_tensor(t, mesh, [Shard(0)]) for i, t in enumerate(full)}

    def timed(fn: Any) -> float:
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        dist.barrier()
        return time.perf_counter() - t0

    out: dict[str, list[float]] = {}
    warm = [True]
    turn = [0]  # rounds so far: which load goes first

    def put(k: str, v: float) -> None:
        if not warm[0]:
            out.setdefault(k, []).append(v)

    def pair(ours: Any, theirs: Any) -> None:
        """Both sides of one comparison, in an order that alternates from round to round:
        the side that goes second finds the first one's writes on the disk (module docstring)."""
        for fn in (ours, theirs) if turn[0] % 2 == 0 else (theirs, ours):
            if rank == 0:
                os.sync()  # neither side finds the other's dirty pages to write back
            fn()

    def one(base: Path) -> None:
        store = base / "store"
        if mode == "save":
            st = state()
            if rank == 0:
                Store.init(store)
            dist.barrier()
            pair(
                lambda: put(
                    "ledger save",
                    timed(lambda: save_checkpoint(st, step=1, store=store, run_id="b")),
                ),
                lambda: put(
                    "dcp save", timed(lambda: dcp.save(st, checkpoint_id=str(base / "dcp1")))
                ),
            )
            for i in range(0, N_TENSORS, 10):  # 10% of the tensors change
                st[f"t{i}"].to_local().add_(1.0)
            pair(
                lambda: put(
                    "ledger second save",
                    timed(lambda: save_checkpoint(st, step=2, store=store, run_id="b")),
                ),
                lambda: put(
                    "dcp second save",
                    timed(lambda: dcp.save(st, checkpoint_id=str(base / "dcp2"))),
                ),
            )
            for i in range(0, N_TENSORS, 10):
                st[f"t{i}"].to_local().add_(1.0)

            def background() -> None:
                dist.barrier()
                t0 = time.perf_counter()
                pending = save_checkpoint(st, step=3, store=store, run_id="b", background=True)
                put("ledger background blocked", time.perf_counter() - t0)
                pending.wait()
                wait_for_checkpoints()
                dist.barrier()

            def dcp_async() -> None:
                dist.barrier()
                t0 = time.perf_counter()
                fut = dcp.async_save(st, checkpoint_id=str(base / "dcp3"))
                put("dcp async_save blocked", time.perf_counter() - t0)
                fut.result()
                dist.barrier()

            pair(background, dcp_async)
            loads(base, store, "load")
        else:  # reshard: the 4-rank checkpoints loaded at this world size
            loads(base, store, "reshard")

    def loads(base: Path, store: Path, what: str) -> None:
        """``load_checkpoint`` and ``dcp.load`` of step 2, in an order that alternates from
        round to round, each into a state made before its clock starts (the DTensors a
        job's model holds; making them scatters the tensors, which neither load does), after
        a ``sync`` (the saves' dirty pages written back, not written during a load)."""

        def ledger() -> None:
            st = state()
            if rank == 0:
                os.sync()
            put(
                f"ledger {what}",
                timed(lambda: load_checkpoint(2, state=st, store=store, run_id="b")),
            )

        def theirs() -> None:
            st = state()
            if rank == 0:
                os.sync()
            put(f"dcp {what}", timed(lambda: dcp.load(st, checkpoint_id=str(base / "dcp2"))))

        for fn in (ledger, theirs) if turn[0] % 2 == 0 else (theirs, ledger):
            fn()
        turn[0] += 1

    # A first round untimed: imports and first-use costs (either side's) are not measured.
    one(work / ("r0" if mode == "reshard" else "warm"))
    warm[0] = False
    for r in range(rounds):
        one(work / f"r{r}")
    if rank == 0:
        import ledger

        out["ledger"] = str(Path(ledger.__file__).resolve().parent)  # type: ignore[assignment]
        (work / f"{mode}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


def _torchrun(
    n: int, mode: str, work: Path, rounds: int, total: int, path: str = str(ROOT)
) -> dict[str, list[float]]:
    """``_worker`` at ``n`` ranks; ``path``: the PYTHONPATH (the baseline's ``ledger`` first),
    whose first entry's ``ledger`` the workers must have imported."""
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1")
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"]
    subprocess.run(
        [*cmd, "-m", "bench.bench_checkpoint_sharded", mode, str(work), str(rounds), str(total)],
        env=env,
        check=True,
        cwd=work,  # not ROOT: ``-m`` puts the working directory first on sys.path
        timeout=1800,
    )
    data: dict[str, Any] = json.loads((work / f"{mode}.json").read_text())
    got, want = data.pop("ledger"), (Path(path.split(os.pathsep)[0]) / "ledger").resolve()
    if Path(got) != want:
        raise RuntimeError(f"the {mode} workers imported {got}, not {want}: a false figure")
    return data


def run(quick: bool) -> list[Row]:
    from . import baseline_checkout

    rounds, total = (2, TOTAL // 4) if quick else (5, TOTAL)
    before: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sharded-") as tmp:
        work = Path(tmp)
        base = baseline_checkout(work / "baseline")
        if base is None:
            rest()
            times = _torchrun(4, "save", work, rounds, total)
        else:
            # The baseline's saves in the same run: half the rounds each, in the order
            # now, before, before, now, each torchrun after the same rest (``bench.rest``).
            half = max(1, rounds // 2)
            times, path = {}, f"{base[1]}:{ROOT}"
            parts = (("now", half), ("before", half), ("before", rounds - half))
            for n, (which, part) in enumerate(parts):
                rest(work / f"{parts[n - 1][0]}-{n - 1}" if n else None)
                got = _torchrun(
                    4,
                    "save",
                    work / f"{which}-{n}",
                    part,
                    total,
                    path if which == "before" else str(ROOT),
                )
                for k, v in got.items():
                    (before if which == "before" else times).setdefault(k, []).extend(v)
            rest(work / f"{parts[-1][0]}-{len(parts) - 1}")
            for k, v in _torchrun(4, "save", work, rounds - half, total).items():
                times.setdefault(k, []).extend(v)
        # The reshard loads the stores of the last torchrun of this checkout, in ``work``.
        last = rounds if base is None else rounds - max(1, rounds // 2)
        if base is not None:  # the baseline's reshard of the same stores, just before
            before.update(_torchrun(2, "reshard", work, last, total, f"{base[1]}:{ROOT}"))
        times.update(_torchrun(2, "reshard", work, last, total))
    med = {k: statistics.median(v) for k, v in times.items()}

    def ratios(f: dict[str, list[float]], ours: str, theirs: str) -> list[float]:
        """Each round's figure over the same round's DCP figure: the two ran side by side,
        so a round the machine was busier slows both."""
        return [a / b for a, b in zip(f[ours], f[theirs], strict=True)]

    mib = total / 2**20
    pairs = [
        ("save at 4 ranks", "ledger save", "dcp save", "dcp.save", "≤ 1.0×", 1.0),
        (
            "second save, 10% of tensors changed",
            "ledger second save",
            "dcp second save",
            "dcp.save of it",
            "≤ 0.2×",
            0.2,
        ),
        (
            "time a background save holds training",
            "ledger background blocked",
            "dcp async_save blocked",
            "dcp.async_save",
            "≤ 0.5×",
            0.5,
        ),
        (
            "load at 4 ranks, every byte verified",
            "ledger load",
            "dcp load",
            "dcp.load",
            "≤ 1.2×",
            1.2,
        ),
        ("reshard 4 → 2 ranks on load", "ledger reshard", "dcp reshard", "dcp.load", "≤ 1.5×", 1.5),
    ]
    rows = []
    for what, ours, theirs, ref, target, bound in pairs:
        each = ratios(times, ours, theirs)
        ratio = statistics.median(each)
        rows.append(
            Row(
                NAME,
                f"{what} ({mib:.0f} MiB, {N_TENSORS} DTensors)",
                med[ours] * 1000,
                "ms",
                reference=f"{ref} {med[theirs] * 1000:.0f} ms; "
                f"rounds {min(each):.2f}-{max(each):.2f}×",
                ratio=ratio,
                target=target,
                passed=ratio <= bound,
                note=f"median of {len(each)} rounds; each figure from a barrier to a barrier, "
                "so the slowest rank counts (torchrun, gloo, CPU); ratio: the median of the "
                "rounds' ratios (each round's figure over the same round's DCP figure); the two "
                "sides run in an order that alternates from round to round, each after a sync, "
                f"and every torchrun after {REST_SECONDS} s of rest (the disk's write budget: "
                "bench/bench_checkpoint_sharded.py)",
            )
        )
        if base is not None and ours in before:
            old = {k: statistics.median(v) for k, v in before.items()}
            each = ratios(before, ours, theirs)
            ratio = statistics.median(each)
            rows.append(
                Row(
                    NAME,
                    f"{what} ({mib:.0f} MiB, {N_TENSORS} DTensors) at {base[0]} (before)",
                    old[ours] * 1000,
                    "ms",
                    reference=f"{ref} {old[theirs] * 1000:.0f} ms; "
                    f"rounds {min(each):.2f}-{max(each):.2f}×",
                    ratio=ratio,
                    note=f"the same at {base[0]} (LEDGER_BENCH_BASELINE), in the same run: "
                    f"{len(before[ours])} rounds, in torchruns between this checkout's (the "
                    "reshard: just before this checkout's, on the same stores)",
                )
            )
    return rows


if __name__ == "__main__":
    _worker(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
