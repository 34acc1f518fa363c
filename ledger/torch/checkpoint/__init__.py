"""Atomically published, content-addressed, sharded checkpoints with exact resume.

The public face of ``save``, ``load``, ``export`` and ``sampler``; see
docs/how-to/checkpoints.md for the training-loop pattern and docs/format.md ("Checkpoints") for
what lands on disk.
"""

from __future__ import annotations

from .background import PendingCheckpoint, wait_for_checkpoints
from .common import CheckpointInfo
from .export import export_checkpoint, list_checkpoints
from .load import LoadedCheckpoint, import_legacy, load_checkpoint
from .sampler import ResumableSampler
from .save import save_checkpoint

__all__ = [
    "CheckpointInfo",
    "LoadedCheckpoint",
    "PendingCheckpoint",
    "ResumableSampler",
    "export_checkpoint",
    "import_legacy",
    "list_checkpoints",
    "load_checkpoint",
    "save_checkpoint",
    "wait_for_checkpoints",
]
