"""What training code imports: metrics, seeds and RNG states, determinism, monitors.

Importing this package never imports torch, numpy or pydantic (the RNG functions load on first
use), so ``import ledger`` stays cheap. ``ledger.runtime.ingest`` is the recorder's side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._env import RankInfo, rank_info
from .run import Run, current_run, log, set_current_run
from .seeds import Seeds, current_seeds, seed, stream_id

if TYPE_CHECKING:
    from ..records.rng import RngState
    from .rng import capture_rng, register_generator, restore_rng

__all__ = [
    "RankInfo",
    "Run",
    "Seeds",
    "capture_rng",
    "current_run",
    "current_seeds",
    "log",
    "rank_info",
    "register_generator",
    "restore_rng",
    "resume_from",
    "save_rng_state",
    "seed",
    "set_current_run",
    "stream_id",
]

_LAZY = {"capture_rng", "register_generator", "restore_rng"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import rng

        return getattr(rng, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resume_from() -> str | None:
    """The checkpoint id ``ledger replay --from-checkpoint`` asks this process to resume from
    (``LEDGER_RESUME_FROM``), else None. Scripts that support exact resume pass it to
    ``ledger.torch.load_checkpoint``."""
    import os

    return os.environ.get("LEDGER_RESUME_FROM") or None


def save_rng_state(label: str, step: int | None = None) -> RngState:
    """``current_run().save_rng_state(label, step)``."""
    return current_run().save_rng_state(label, step)
