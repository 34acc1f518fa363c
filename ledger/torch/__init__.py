"""PyTorch helpers. Importing this package does not import torch; each helper does on use.

The checkpoint names import torch when their module loads, so they are resolved lazily on
first attribute access (PEP 562) from ``ledger.torch.checkpoint``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .checkpoint import __all__ as _checkpoint_all
from .data import WorkerInit, dataloader_generator, worker_init, worker_init_fn
from .determinism import determinism_differences, determinism_settings, deterministic
from .tracing import Trace, trace
from .watch import Watch, watch

if TYPE_CHECKING:
    from .checkpoint import (
        CheckpointInfo,
        LoadedCheckpoint,
        PendingCheckpoint,
        ResumableSampler,
        export_checkpoint,
        import_legacy,
        list_checkpoints,
        load_checkpoint,
        save_checkpoint,
        wait_for_checkpoints,
    )

# The checkpoint package resolves its own names lazily and imports no torch itself: its list
# is the one list of them.
_CHECKPOINT_NAMES = frozenset(_checkpoint_all)

__all__ = [
    "CheckpointInfo",
    "LoadedCheckpoint",
    "PendingCheckpoint",
    "ResumableSampler",
    "Trace",
    "Watch",
    "WorkerInit",
    "dataloader_generator",
    "determinism_differences",
    "determinism_settings",
    "deterministic",
    "export_checkpoint",
    "import_legacy",
    "list_checkpoints",
    "load_checkpoint",
    "save_checkpoint",
    "trace",
    "wait_for_checkpoints",
    "watch",
    "worker_init",
    "worker_init_fn",
]


def __getattr__(name: str) -> Any:
    if name in _CHECKPOINT_NAMES:
        from . import checkpoint

        value = getattr(checkpoint, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _CHECKPOINT_NAMES)
