"""Hugging Face ``transformers`` adapter: metrics, seeds, RNG states and the Trainer's own
checkpoints into ledger.

``LedgerCallback`` (a ``TrainerCallback``) sends what the Trainer logs to the current run (from
the main process), records the seed and an RNG state when training begins, and stores every
checkpoint directory the Trainer writes (``checkpoint-<step>/``: weights, optimizer, scheduler,
RNG states, trainer state) as a ledger checkpoint, byte for byte. ``restore_checkpoint`` writes
such a directory back, verified, for ``trainer.train(resume_from_checkpoint=...)``; the resume
is then exact. See docs/how-to/transformers.md.

Importing this module does not import ``transformers``; the callback loads it on first access.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import require
from ._hf_files import FORMAT as CHECKPOINT_FORMAT

if TYPE_CHECKING:
    from ._hf import LedgerCallback

__all__ = ["CHECKPOINT_FORMAT", "LedgerCallback", "restore_checkpoint", "seed_everything"]


def _impl() -> Any:
    require("transformers", "hf", "ledger.integrations.hf")
    from . import _hf

    return _hf


def __getattr__(name: str) -> Any:
    if name == "LedgerCallback":
        return _impl().LedgerCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"LedgerCallback"})


def seed_everything(root: int | None = None) -> int:
    """Record the run's root seed with ``ledger.seed`` and seed with ``transformers.set_seed``.

    Returns the seed used (the 32-bit part of the ``transformers`` stream derived from the
    root); pass it as ``TrainingArguments(seed=...)`` so the Trainer seeds the same way. Under
    ``ledger replay`` the recorded root is forced, so the same seed comes back.
    """
    return int(_impl().seed_everything(root))


def restore_checkpoint(
    target: str | int = "latest",
    *,
    output_dir: str | Path,
    run_id: str | None = None,
    store: Any = None,
) -> Path:
    """Write the Trainer checkpoint directory stored as ledger checkpoint ``target`` (``latest``,
    a step, ``checkpoints/<run>/step-<n>``, an id or a run) into ``output_dir`` and return its
    path, for ``trainer.train(resume_from_checkpoint=...)``. Every byte is verified first."""
    from ._hf_files import restore

    return restore(target, output_dir=Path(output_dir), run_id=run_id, store=store)
