"""PyTorch Lightning adapter: metrics, seeds, RNG states and checkpoints into ledger.

``LedgerLogger`` sends what ``self.log`` logs to the current run (rank zero only, like every
Lightning logger). ``LedgerCallback`` records the seed and an RNG state at the start of
training and installs ``LedgerCheckpointIO``, which stores every checkpoint Lightning writes as a
ledger checkpoint (content-addressed, no pickle) and leaves a small pointer file at the path
Lightning chose, so ``ModelCheckpoint`` and ``trainer.fit(ckpt_path=...)`` work unchanged and a
resume is exact. See docs/how-to/lightning.md.

Importing this module does not import Lightning; the classes load it on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import require

if TYPE_CHECKING:
    from ._lightning import (
        POINTER_FORMAT,
        LedgerCallback,
        LedgerCheckpointIO,
        LedgerLogger,
        read_pointer,
    )

__all__ = [
    "POINTER_FORMAT",
    "LedgerCallback",
    "LedgerCheckpointIO",
    "LedgerLogger",
    "read_pointer",
    "seed_everything",
]

_LAZY = frozenset(
    {"POINTER_FORMAT", "LedgerCallback", "LedgerCheckpointIO", "LedgerLogger", "read_pointer"}
)


def _impl() -> Any:
    require("lightning.pytorch", "lightning", "ledger.integrations.lightning")
    from . import _lightning

    return _lightning


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(_impl(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)


def seed_everything(root: int | None = None, *, workers: bool = True) -> int:
    """Record the run's root seed with ``ledger.seed`` and seed through Lightning.

    The seed Lightning gets is the 32-bit part of the ``lightning`` stream derived from the
    root, so ``ledger replay`` (which forces the recorded root) seeds the same way. Returns it.
    """
    return int(_impl().seed_everything(root, workers=workers))
