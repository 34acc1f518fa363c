"""Checkpoint save and load of a float32 state dict against ``torch.save`` + fsync and
``torch.load(weights_only=True)`` of the same state, in the same run.

``run`` returns ``bench.Row`` figures (``python -m bench --only checkpoint``). Peak memory is
measured in child processes (``--child``) as the peak RSS beyond the state itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import Row

NAME = "checkpoint"
N_TENSORS = 50


def _state(total_bytes: int, seed: int = 0) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    numel = total_bytes // 4 // N_TENSORS
    return {f"layer{i}.weight": torch.randn(numel, generator=g) for i in range(N_TENSORS)}


def _torch_save(state: dict[str, Any], path: Path) -> None:
    import torch

    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def _dcp_async_save(state: dict[str, Any], path: Path) -> tuple[float, Any]:
    """Seconds ``torch.distributed.checkpoint.async_save`` held the caller, and its future."""
    import warnings

    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():  # "torch.distributed is ... uninitialized": one process
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        fut = dcp.async_save(state, checkpoint_id=str(path))
        return time.perf_counter() - t, fut


def measure_times(total_bytes: int, rounds: int) -> dict[str, list[float]]:
    """Seconds of each operation in each of ``rounds`` rounds; within a round the operations
    run one after the other on the same state, so every ratio compares neighbours in time."""
    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint
    from ledger.torch.ckpt_reuse import forget

    state = _state(total_bytes)
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    pt = work / "state.pt"
    fresh, inc, incz, trusted, bg = (
        work / n for n in ("fresh", "inc", "inc-zstd", "trusted", "bg")
    )
    for d in (inc, incz, trusted, bg):
        Store.init(d)
    step = [0]

    def save(store: Path, **kw: Any) -> Any:
        step[0] += 1
        return save_checkpoint({"model": state}, step=step[0], store=store, run_id="bench", **kw)

    def touch_tenth() -> None:  # 10% of the tensors change, as between two nearby steps
        for i in range(0, N_TENSORS, 10):
            state[f"layer{i}.weight"].add_(1.0)

    def timed(fn: Any) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    from ledger._hashing import hash_bytes

    views = [memoryview(t.numpy()).cast("B") for t in state.values()]
    out: dict[str, list[float]] = {}
    infos: list[Any] = []  # what each 90%-unchanged save reported

    def add(key: str, seconds: float) -> None:
        out.setdefault(key, []).append(seconds)

    try:
        save(inc)
        save(incz, compress=True)
        save(trusted, trust_version_counter=True)
        save(bg, background=True).wait()

        def torch_save() -> None:
            pt.unlink(missing_ok=True)
            os.sync()
            add("torch_save", timed(lambda: _torch_save(state, pt)))

        def fresh_save() -> None:
            if fresh.exists():  # its mappings go with it, as a new process would have none
                forget(Store.open(fresh).objects)
            shutil.rmtree(fresh, ignore_errors=True)
            Store.init(fresh)
            os.sync()
            add("ledger_save_fresh", timed(lambda: save(fresh)))

        def default_save() -> None:
            os.sync()
            add("ledger_save_10pct_new", timed(lambda: infos.append(save(inc))))
            add("bytes_new_10pct", float(infos[-1].bytes_new))

        def zstd_save() -> None:
            os.sync()
            add("ledger_save_10pct_new_zstd", timed(lambda: save(incz, compress=True)))

        def trusted_save() -> None:
            os.sync()
            add(
                "ledger_save_10pct_new_trusted",
                timed(lambda: save(trusted, trust_version_counter=True)),
            )

        def background_save() -> None:
            os.sync()
            t = time.perf_counter()
            pending = save(bg, background=True)
            add("background_blocked", time.perf_counter() - t)  # the whole call, wall time
            add("background_total", pending.wait().seconds)

        def dcp_save() -> None:
            dest = work / "dcp"
            shutil.rmtree(dest, ignore_errors=True)
            os.sync()
            blocked, fut = _dcp_async_save(state, dest)
            t = time.perf_counter()
            fut.result()
            add("dcp_async_blocked", blocked)
            add("dcp_async_total", blocked + time.perf_counter() - t)

        def hash_all() -> None:
            add("hash_only", timed(lambda: [hash_bytes(v) for v in views]))

        ops = [
            torch_save,
            fresh_save,
            default_save,
            zstd_save,
            trusted_save,
            background_save,
            dcp_save,
            hash_all,
        ]
        for r in range(rounds):
            touch_tenth()  # what every 90%-unchanged save of this round finds changed
            # The order rotates round by round, and each timed write starts after a sync: no
            # operation always follows the same one (a 400 MB write and delete leaves the
            # disk busy for the next), nor always comes first.
            for op in ops[r % len(ops) :] + ops[: r % len(ops)]:
                op()
        _torch_save(state, pt)
        # A load happens once, at resume, in a new process: each is timed in a fresh child, so
        # neither reuses the memory a previous load freed (in one process, glibc hands a
        # freed state back without page faults to whichever load comes next).
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        for r in range(rounds):
            for op in (
                ("torch-load", "ledger-load") if r % 2 == 0 else ("ledger-load", "torch-load")
            ):
                cmd = [sys.executable, __file__, "--time-load", op, str(pt), str(inc)]
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                add(op.replace("-", "_"), float(res.stdout))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _time_load(op: str, pt: Path, store: Path) -> float:
    """Runs in a fresh process: seconds of one load of the bench's state, imports excluded."""
    import torch

    from ledger.torch.checkpoint import load_checkpoint

    t = time.perf_counter()
    if op == "torch-load":
        torch.load(pt, weights_only=True)
    else:
        load_checkpoint(store=store, run_id="bench")
    return time.perf_counter() - t


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRss:
    """Samples resident memory every millisecond in a thread; ``peak`` is the highest seen."""

    def __enter__(self) -> _PeakRss:
        import threading

        self.peak = _rss_now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, _rss_now())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_now())


def _child(op: str, total_bytes: int, work: Path) -> dict[str, float]:
    """Runs in a fresh process: peak RSS of one operation beyond the state it handles."""
    import torch

    from ledger.store import Store
    from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

    state = None if op.endswith("load") else _state(total_bytes)
    base = _rss_now()
    blocked = 0.0
    t = time.perf_counter()
    with _PeakRss() as rss:
        if op == "torch-load":
            state = torch.load(work / "state.pt", weights_only=True)
        elif op == "ledger-load":
            state = load_checkpoint(store=work / ".ledger", run_id="bench").state
        elif op == "torch-save":
            _torch_save(state or {}, work / "state.pt")
        elif op == "ledger-save-background":
            store = Store.init(work / ".ledger-bg")
            pending = save_checkpoint(
                {"model": state}, step=1, store=store, run_id="bench", background=True
            )
            pending.wait()
            blocked = pending.blocked_seconds
        elif op == "ledger-save-again":  # a second save compares with the mapped objects
            store = Store.init(work / ".ledger-again")
            save_checkpoint({"model": state}, step=1, store=store, run_id="bench")
            for i in range(0, N_TENSORS, 10):
                (state or {})[f"layer{i}.weight"].add_(1.0)
            save_checkpoint({"model": state}, step=2, store=store, run_id="bench")
        else:
            store = Store.init(work / ".ledger")
            save_checkpoint({"model": state}, step=1, store=store, run_id="bench")
    seconds = time.perf_counter() - t
    loaded = total_bytes if op.endswith("load") else 0  # a load allocates the state itself
    return {
        "seconds": seconds,
        "blocked": blocked,
        "beyond_state_bytes": max(0, rss.peak - base - loaded),
    }


MEMORY_OPS = (
    "torch-save",
    "ledger-save",
    "ledger-save-again",
    "ledger-save-background",
    "torch-load",
    "ledger-load",
)


def measure_memory(total_bytes: int) -> dict[str, dict[str, float]]:
    """Peak RSS beyond the state (and seconds), per operation, each in its own process."""
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-mem-"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out: dict[str, dict[str, float]] = {}
    try:
        for op in MEMORY_OPS:
            cmd = [sys.executable, __file__, "--child", op, str(total_bytes), str(work)]
            res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            out[op] = json.loads(res.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _row(what: str, value: float, unit: str, **kw: Any) -> Row:
    return Row(NAME, what, value, unit, **kw)


ROUNDS = 7


def run(quick: bool) -> list[Row]:
    import statistics

    import torch

    total = (40 if quick else 400) * 1_000_000
    mb = f"{total // 1_000_000} MB fp32, {N_TENSORS} tensors"
    t = measure_times(total, rounds=ROUNDS)
    mem = measure_memory(total)
    tensor_mib = total / N_TENSORS / 2**20
    med = {k: statistics.median(v) for k, v in t.items()}

    def ratio_row(
        what: str, key: str, ref: str, ref_key: str, limit: float | None, note: str = ""
    ) -> Row:
        """``note`` replaces the section's common note for this row."""
        # Each round's figure over the same round's reference, then the median of those.
        ratios = [a / b for a, b in zip(t[key], t[ref_key], strict=True)]
        r = statistics.median(ratios)
        return _row(
            what,
            med[key],
            "s",
            reference=f"{ref} {med[ref_key]:.3f} s; rounds {min(ratios):.2f}-{max(ratios):.2f}x",
            ratio=r,
            target="" if limit is None else f"<= {limit}x",
            passed=None if limit is None else r <= limit,
            note=note
            or f"{mb}; each ratio: the median over {len(ratios)} interleaved rounds of the "
            "round's figure over the same round's reference (range shown after it); in each "
            "round 10% of the tensors change first, then the operations run in an order that "
            "rotates from round to round, each timed write after a `sync`; a background save "
            "holds one copy of the state in staging buffers kept between saves (peak RSS rows)",
        )

    ts = "torch.save+fsync"
    rows = [
        ratio_row("save, fresh store", "ledger_save_fresh", ts, "torch_save", 1.1),
        ratio_row("save, 90% of tensors unchanged", "ledger_save_10pct_new", ts, "torch_save", 0.2),
        ratio_row(
            "save, 90% unchanged, compress=True (every chunk zstd makes 10% smaller, "
            "the default until now)",
            "ledger_save_10pct_new_zstd",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "save, 90% unchanged, trust_version_counter=True",
            "ledger_save_10pct_new_trusted",
            ts,
            "torch_save",
            0.2,
        ),
        ratio_row(
            "time the caller is blocked by save_checkpoint(background=True)",
            "background_blocked",
            ts,
            "torch_save",
            0.1,
        ),
        ratio_row(
            f"anchor: time the caller is blocked by torch {torch.__version__.split('+')[0]} "
            "torch.distributed.checkpoint.async_save",
            "dcp_async_blocked",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "background save, call to published (its real duration)",
            "background_total",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "anchor: torch.distributed.checkpoint.async_save, call to done",
            "dcp_async_total",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "load (verified)",
            "ledger_load",
            "torch.load(weights_only=True)",
            "torch_load",
            1.0,
            note=f"{mb}; median over {ROUNDS} rounds of the round's ratio; each load in a "
            "fresh process (its imports not timed), as at a resume, the two in alternating "
            "order, the files' pages cached",
        ),
        ratio_row(
            "BLAKE3 of the whole state (part of every save)", "hash_only", ts, "torch_save", None
        ),
    ]
    first_bg = mem["ledger-save-background"]["blocked"]
    rows.insert(
        4,
        _row(
            "time the caller is blocked by the first save_checkpoint(background=True) of a process",
            first_bg,
            "s",
            reference=f"{ts} {med['torch_save']:.3f} s (median of the rounds)",
            ratio=first_bg / med["torch_save"],
            note="the first background save of a process allocates its staging buffers (page "
            "faults, measured once in a fresh process); later ones copy into the same buffers",
        ),
    )
    new = statistics.median(t["bytes_new_10pct"])
    rows.append(
        _row(
            "bytes written by the 90%-unchanged save (dedup at work)",
            new / 1e6,
            "MB",
            reference=f"the state {total / 1e6:.0f} MB",
            ratio=new / total,
            note=(
                "how a default save skips the unchanged 90%: each chunk is compared bitwise "
                "(memcmp) with the object file the previous save of that tensor wrote, mapped "
                "read-only, and reuses its id when equal, so only changed chunks are hashed; "
                "the cost is that the last save's bytes stay mapped from the page cache "
                "(ledger-save-again row: they count in RSS as file-backed pages the kernel "
                "may reclaim; at most a quarter of RAM or of the cgroup limit is mapped)"
            ),
        )
    )
    notes = {
        "ledger-save-again": "a save, 10% of the tensors changed, a second save (peak over both)",
    }
    for op in MEMORY_OPS:
        mib = mem[op]["beyond_state_bytes"] / 2**20
        rows.append(
            _row(
                f"peak RSS beyond the state: {op}",
                mib,
                "MiB",
                reference=f"one tensor = {tensor_mib:.1f} MiB",
                ratio=mib / tensor_mib,
                note=notes.get(op, mb),
            )
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--time-load":
        print(_time_load(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)
