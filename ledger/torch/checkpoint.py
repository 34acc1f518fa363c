"""Atomically published, content-addressed, sharded checkpoints with exact resume.

The public face of ``ckpt_save``, ``ckpt_load``, ``ckpt_export`` and ``ckpt_sampler``; see
docs/how-to/checkpoints.md for the training-loop pattern and docs/format.md ("Checkpoints") for
what lands on disk.
"""

from __future__ import annotations

from .ckpt_background import PendingCheckpoint, wait_for_checkpoints
from .ckpt_common import CheckpointInfo
from .ckpt_export import export_checkpoint, list_checkpoints
from .ckpt_load import LoadedCheckpoint, import_legacy, load_checkpoint
from .ckpt_sampler import ResumableSampler
from .ckpt_save import save_checkpoint

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
