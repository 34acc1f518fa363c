"""PyTorch helpers. Importing this package does not import torch; each helper does on use."""

from __future__ import annotations

from .data import WorkerInit, dataloader_generator, worker_init, worker_init_fn
from .determinism import determinism_differences, determinism_settings, deterministic
from .watch import Watch, watch

__all__ = [
    "Watch",
    "WorkerInit",
    "dataloader_generator",
    "determinism_differences",
    "determinism_settings",
    "deterministic",
    "watch",
    "worker_init",
    "worker_init_fn",
]
