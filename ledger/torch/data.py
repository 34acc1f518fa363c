"""DataLoader seeding that gives every worker of every rank its own recorded stream.

torch seeds worker ``w`` with ``base_seed + w``, where ``base_seed`` comes from the loader's
generator; with the same global seed on every rank, all ranks' workers draw the same
augmentations. ``worker_init_fn`` re-seeds Python, NumPy and torch in each worker from the run's
root, the rank, the worker id and ``base_seed`` (so epochs still differ), then saves the worker's
initial RNG state to ``rng/rank-<r>-worker-<w>-<purpose>-init-<base>.json``.

    loader = DataLoader(ds, shuffle=True, num_workers=2,
                        generator=ledger.torch.dataloader_generator("data"),
                        worker_init_fn=ledger.torch.worker_init_fn)
"""

from __future__ import annotations

import random
from typing import Any

from ..runtime import seeds as _seeds
from ..runtime._env import rank_info
from ..runtime._warn import warn_once
from ..runtime.run import current_run

__all__ = ["WorkerInit", "dataloader_generator", "worker_init", "worker_init_fn"]


def dataloader_generator(purpose: str = "data") -> Any:
    """A registered ``torch.Generator`` for a loader's shuffling (captured in RNG states)."""
    return _seeds.current_seeds().torch_generator(f"dataloader:{purpose}")


class WorkerInit:
    """A picklable ``worker_init_fn`` (works with fork and spawn start methods)."""

    def __init__(self, purpose: str = "data") -> None:
        self.purpose = purpose
        self.root: int | None = None  # set when pickled to a spawned worker

    def __getstate__(self) -> dict[str, Any]:
        current = _seeds._current
        return {"purpose": self.purpose, "root": current.root if current else self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.purpose, self.root = state["purpose"], state["root"]

    def __call__(self, worker_id: int) -> None:
        try:
            self._init(worker_id)
        except Exception as e:  # never kill a worker over bookkeeping
            warn_once("worker-init", f"worker {worker_id}: seeding/recording failed: {e}")

    def _init(self, worker_id: int) -> None:
        import numpy as np
        import torch

        info = torch.utils.data.get_worker_info()
        base = (info.seed if info is not None else torch.initial_seed()) - worker_id
        current = _seeds._current  # inherited through fork
        root = self.root if self.root is not None else (current.root if current else None)
        rank = rank_info().rank
        if root is None:  # ledger.seed() never ran: fall back on torch's draw, still per rank
            value = _seeds.worker_seed(base, rank, f"worker:{self.purpose}", worker_id, 0)
        else:
            value = _seeds.worker_seed(root, rank, f"worker:{self.purpose}", worker_id, base)
        random.seed(value)
        np.random.seed([value & 0xFFFFFFFF, value >> 32])
        torch.manual_seed(value)
        current_run().save_rng_state(
            f"{self.purpose}-init-{base & ((1 << 64) - 1):016x}",
            worker=worker_id,
            extra={"seed": value, "base_seed": base, "purpose": self.purpose, "root": root},
        )


def worker_init(purpose: str = "data") -> WorkerInit:
    """A ``worker_init_fn`` for another loader (e.g. ``"val"``), so its streams differ."""
    return WorkerInit(purpose)


worker_init_fn = WorkerInit("data")
