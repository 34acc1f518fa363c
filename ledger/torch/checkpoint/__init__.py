"""Atomically published, content-addressed, sharded checkpoints with exact resume.

The public face of ``save``, ``load``, ``export`` and ``sampler``; see
docs/how-to/checkpoints.md for the training-loop pattern and docs/format.md ("Checkpoints") for
what lands on disk.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as mypy sees them (``X as X``: exported)
    from .background import PendingCheckpoint as PendingCheckpoint
    from .background import wait_for_checkpoints as wait_for_checkpoints
    from .common import CheckpointInfo as CheckpointInfo
    from .export import export_checkpoint as export_checkpoint
    from .export import list_checkpoints as list_checkpoints
    from .load import LoadedCheckpoint as LoadedCheckpoint
    from .load import import_legacy as import_legacy
    from .load import load_checkpoint as load_checkpoint
    from .sampler import ResumableSampler as ResumableSampler
    from .save import save_checkpoint as save_checkpoint

# Each public name and the submodule that defines it, imported on first use (PEP 562): saving
# and loading import torch, listing a run's checkpoints (``ledger checkpoints``) does not, and
# importing any submodule imports this package first.
_HOME = {
    "CheckpointInfo": "common",
    "LoadedCheckpoint": "load",
    "PendingCheckpoint": "background",
    "ResumableSampler": "sampler",
    "export_checkpoint": "export",
    "import_legacy": "load",
    "list_checkpoints": "export",
    "load_checkpoint": "load",
    "save_checkpoint": "save",
    "wait_for_checkpoints": "background",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
