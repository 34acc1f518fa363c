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

from bench import Row, median_time

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


def measure_times(total_bytes: int, repeat: int) -> dict[str, float]:
    """Median seconds of each operation, side by side on the same state."""
    import torch

    from ledger.store import Store
    from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

    state = _state(total_bytes)
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    pt = work / "state.pt"
    store_dir = work / ".ledger"
    step = [0]

    def fresh_store() -> None:
        shutil.rmtree(store_dir, ignore_errors=True)
        Store.init(store_dir)

    def ledger_save() -> None:
        step[0] += 1
        save_checkpoint({"model": state}, step=step[0], store=store_dir, run_id="bench")

    def touch_tenth() -> None:  # 10% of the tensors change, as between two nearby steps
        for i in range(0, N_TENSORS, 10):
            state[f"layer{i}.weight"].add_(1.0)

    try:
        out = {
            "torch_save": median_time(
                lambda: _torch_save(state, pt), repeat, lambda: pt.unlink(True)
            ),
            "ledger_save_fresh": median_time(ledger_save, repeat, fresh_store),
        }
        fresh_store()
        ledger_save()
        out["ledger_save_10pct_new"] = median_time(ledger_save, repeat, touch_tenth)

        def trusted_save() -> None:
            step[0] += 1
            save_checkpoint(
                {"model": state},
                step=step[0],
                store=store_dir,
                run_id="bench",
                trust_version_counter=True,
            )

        trusted_save()
        out["ledger_save_10pct_new_trusted"] = median_time(trusted_save, repeat, touch_tenth)
        _torch_save(state, pt)
        out["torch_load"] = median_time(
            lambda: torch.load(pt, weights_only=True), repeat, lambda: None
        )
        out["ledger_load"] = median_time(
            lambda: load_checkpoint(store=store_dir, run_id="bench"), repeat, lambda: None
        )
        hasher_view = [memoryview(t.numpy()).cast("B") for t in state.values()]
        from ledger._hashing import hash_bytes

        out["hash_only"] = median_time(lambda: [hash_bytes(v) for v in hasher_view], repeat, list)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


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
    t = time.perf_counter()
    with _PeakRss() as rss:
        if op == "torch-load":
            state = torch.load(work / "state.pt", weights_only=True)
        elif op == "ledger-load":
            state = load_checkpoint(store=work / ".ledger", run_id="bench").state
        elif op == "torch-save":
            _torch_save(state or {}, work / "state.pt")
        else:
            store = Store.init(work / ".ledger")
            save_checkpoint({"model": state}, step=1, store=store, run_id="bench")
    seconds = time.perf_counter() - t
    loaded = total_bytes if op.endswith("load") else 0  # a load allocates the state itself
    return {"seconds": seconds, "beyond_state_bytes": max(0, rss.peak - base - loaded)}


def measure_memory(total_bytes: int) -> dict[str, float]:
    """Peak RSS beyond the state, per operation, each in its own process."""
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-mem-"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out: dict[str, float] = {}
    try:
        for op in ("torch-save", "ledger-save", "torch-load", "ledger-load"):
            cmd = [sys.executable, __file__, "--child", op, str(total_bytes), str(work)]
            res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            out[op] = json.loads(res.stdout)["beyond_state_bytes"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _row(what: str, value: float, unit: str, **kw: Any) -> Row:
    return Row(NAME, what, value, unit, **kw)


def run(quick: bool) -> list[Row]:
    total = (40 if quick else 400) * 1_000_000
    mb = f"{total // 1_000_000} MB fp32, {N_TENSORS} tensors"
    t = measure_times(total, repeat=3)
    mem = measure_memory(total)
    tensor_mib = total / N_TENSORS / 2**20

    def ratio_row(what: str, key: str, ref: str, ref_key: str, limit: float) -> Row:
        r = t[key] / t[ref_key]
        return _row(
            what,
            t[key],
            "s",
            reference=f"{ref} {t[ref_key]:.3f} s",
            ratio=r,
            target=f"<= {limit}x",
            passed=r <= limit,
            note=mb,
        )

    rows = [
        ratio_row("save, fresh store", "ledger_save_fresh", "torch.save+fsync", "torch_save", 1.1),
        ratio_row(
            "save, 90% of tensors unchanged",
            "ledger_save_10pct_new",
            "torch.save+fsync",
            "torch_save",
            0.2,
        ),
        ratio_row(
            "save, 90% unchanged, trust_version_counter=True",
            "ledger_save_10pct_new_trusted",
            "torch.save+fsync",
            "torch_save",
            0.2,
        ),
        ratio_row(
            "load (verified)", "ledger_load", "torch.load(weights_only=True)", "torch_load", 1.0
        ),
        _row(
            "BLAKE3 of the whole state (part of every save)",
            t["hash_only"],
            "s",
            ratio=t["hash_only"] / t["torch_save"],
            reference="torch.save+fsync",
            note=mb,
        ),
    ]
    for op in ("ledger-save", "torch-save", "ledger-load", "torch-load"):
        mib = mem[op] / 2**20
        rows.append(
            _row(
                f"peak RSS beyond the state: {op}",
                mib,
                "MiB",
                reference=f"one tensor = {tensor_mib:.1f} MiB",
                ratio=mib / tensor_mib,
                note=mb,
            )
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)
