"""The Lightning classes behind ``ledger.integrations.lightning`` (imports Lightning)."""

from __future__ import annotations

import json
import os
from argparse import Namespace
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.logger import _convert_params, _flatten_dict
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers.logger import Logger
from lightning.pytorch.utilities import rank_zero_only

from ..errors import UsageError
from ..runtime import current_run
from ._common import (
    check_checkpoint_target,
    hyperparams_note,
    log_values,
    record_seeds,
    set_rank_env,
    start_trace,
)

__all__ = [
    "POINTER_FORMAT",
    "LedgerCallback",
    "LedgerCheckpointIO",
    "LedgerLogger",
    "read_pointer",
    "seed_everything",
]

POINTER_FORMAT = "ledger-lightning-checkpoint/1"
_POINTER_MAX = 64 * 1024  # a pointer is a few hundred bytes; a real .ckpt is a zip


def seed_everything(root: int | None, *, workers: bool) -> int:
    from ..runtime import seed

    set_rank_env()  # in a child of Lightning's DDP launcher: before anything writes as rank 0
    seeds = seed(root, purpose="lightning", torch=True)
    value = seeds.derive("lightning") & 0xFFFF_FFFF  # Lightning takes 32-bit seeds only
    return int(pl.seed_everything(value, workers=workers, verbose=False))


def read_pointer(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The pointer ``LedgerCheckpointIO`` wrote at ``path``, or None for any other file."""
    p = Path(path)
    try:
        if p.stat().st_size > _POINTER_MAX:
            return None
        data = p.read_bytes()
    except OSError:
        return None
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        body = json.loads(data)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("format") != POINTER_FORMAT:
        return None
    return body


def _single_process() -> None:
    """Lightning calls a CheckpointIO on global rank zero only, and a ledger save gathers from
    every rank: under torch.distributed rank zero would wait for ever."""
    from ..torch.checkpoint.collectives import rank_and_world

    _, world = rank_and_world()
    if world > 1:
        raise UsageError(
            f"LedgerCheckpointIO saves from one process; this job has {world}",
            hint="use Lightning's own checkpoint IO under DDP (LedgerCallback(checkpoints=False))",
        )


class LedgerCheckpointIO(TorchCheckpointIO):
    """Stores each checkpoint with ``ledger.torch.save_checkpoint`` (step: ``global_step``) and
    writes a JSON pointer to it at Lightning's path. Loads pointers, ``ledger:<target>`` (a
    checkpoint id, ``checkpoints/<run>/step-<n>`` or a run, as ``ledger checkpoints`` takes) and,
    for old files, plain ``.ckpt`` files through ``torch.load``.

    ``run_id`` and ``store`` default to the run of ``ledger record``/``ledger.start``.
    ``keep_last`` is the ledger's retention (Lightning's ``save_top_k`` removes pointers only).
    """

    def __init__(
        self,
        *,
        store: Any = None,
        run_id: str | None = None,
        keep_last: int | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.keep_last = keep_last
        self.saved: list[dict[str, Any]] = []  # the pointers written by this process

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        from ..torch.checkpoint import save_checkpoint

        if storage_options is not None:
            raise TypeError(
                "LedgerCheckpointIO takes no storage_options; ledger decides where bytes go"
            )
        _single_process()
        step = checkpoint.get("global_step", 0)
        target = Path(path)
        info = save_checkpoint(
            checkpoint,
            step=int(step),
            store=self.store,
            run_id=self.run_id,
            keep_last=self.keep_last,
            note=f"lightning {target.name}",
        )
        from ..torch.checkpoint.common import open_store

        pointer = {
            "format": POINTER_FORMAT,
            "checkpoint": info.oid,
            "run_id": info.run_id,
            "step": info.step,
            "ledger": str(open_store(self.store).root),
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(pointer, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        self.saved.append({**pointer, "path": str(target)})

    def load_checkpoint(
        self, path: Any, map_location: Any | None = None, weights_only: bool | None = None
    ) -> dict[str, Any]:
        from ..torch.checkpoint import load_checkpoint

        text = os.fspath(path)
        store = self.store
        if text.startswith("ledger:"):
            target = text.removeprefix("ledger:")
            if not target:
                raise UsageError(
                    "ckpt_path='ledger:' names no checkpoint",
                    hint="use ledger:<checkpoint id>, ledger:checkpoints/<run>/step-<n> or "
                    "ledger:<run>",
                )
        else:
            pointer = read_pointer(text)
            if pointer is None:  # a checkpoint Lightning wrote itself
                loaded: dict[str, Any] = super().load_checkpoint(
                    path, map_location=map_location, weights_only=weights_only
                )
                return loaded
            target = str(pointer["checkpoint"])
            if store is None and not os.environ.get("LEDGER_DIR"):
                store = pointer.get("ledger")
        # Resume: the process's RNG states come back as they were when the checkpoint was
        # taken (Lightning's own checkpoints do not hold them), before training draws again.
        # The pointer goes with the load event: a replay rebuilds it where it is not tracked.
        source = None if text.startswith("ledger:") else text
        state = load_checkpoint(target, store=store, mode="resume", source=source).state
        if not isinstance(state, dict):
            raise UsageError(f"ledger checkpoint {target} does not hold a Lightning checkpoint")
        return state

    def remove_checkpoint(self, path: Any) -> None:
        """Remove the pointer only: the ledger checkpoint stays until retention and gc."""
        Path(path).unlink(missing_ok=True)


class LedgerLogger(Logger):
    """Metrics into the current ledger run, at Lightning's step; hyperparameters as a note.

    Logs from global rank zero only (Lightning calls loggers on every rank; metrics logged with
    ``sync_dist=True`` are already reduced there). Per-rank metrics: call ``ledger.log`` in
    the module instead, which writes one stream per rank.
    """

    def __init__(self, *, prefix: str = "") -> None:
        super().__init__()
        self._prefix = prefix

    @property
    def name(self) -> str:
        return "ledger"

    @property
    def version(self) -> str:
        return current_run().run_id or "detached"

    @property
    def experiment(self) -> Any:
        return current_run()

    @rank_zero_only  # type: ignore[misc]
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        log_values(step, {f"{self._prefix}{k}": v for k, v in metrics.items()})

    @rank_zero_only  # type: ignore[misc]
    def log_hyperparams(
        self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any
    ) -> None:
        flat = _flatten_dict(_convert_params(params))
        if flat:
            current_run().note(hyperparams_note("lightning", flat))

    @rank_zero_only  # type: ignore[misc]
    def finalize(self, status: str) -> None:
        current_run().flush()


class LedgerCallback(Callback):
    """Seeds, an RNG state at the start of training and ledger checkpoints for a ``Trainer``.

    ``checkpoints=True`` swaps the strategy's checkpoint IO for ``LedgerCheckpointIO`` in
    ``setup`` (before Lightning restores ``ckpt_path``), unless one is already there. It needs
    a single process: Lightning writes checkpoints from rank zero only.
    """

    def __init__(
        self,
        *,
        checkpoints: bool = True,
        store: Any = None,
        run_id: str | None = None,
        keep_last: int | None = None,
        trace: int | None = None,
    ) -> None:
        self.checkpoints = checkpoints
        self.store = store
        self.run_id = run_id
        self.keep_last = keep_last
        self.trace_every = trace  # ledger.torch.trace every N steps
        self.trace: Any = None

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        set_rank_env(trainer.global_rank, trainer.world_size)
        if self.checkpoints and not isinstance(trainer.strategy.checkpoint_io, LedgerCheckpointIO):
            if trainer.world_size > 1:
                raise UsageError(
                    "LedgerCallback(checkpoints=True) saves ledger checkpoints from one "
                    f"process; this Trainer has {trainer.world_size}",
                    hint="pass LedgerCallback(checkpoints=False) to keep metrics and seeds with "
                    "Lightning's own checkpoints",
                )
            check_checkpoint_target(self.store, self.run_id, "LedgerCallback(checkpoints=True)")
            trainer.strategy.checkpoint_io = LedgerCheckpointIO(
                store=self.store, run_id=self.run_id, keep_last=self.keep_last
            )
        record_seeds()
        if trainer.is_global_zero:
            seed = os.environ.get("PL_GLOBAL_SEED")
            if seed is not None:
                current_run().note(f"lightning seed_everything seed: {seed}")

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        current_run().save_rng_state("lightning-train-start", step=trainer.global_step)
        if self.trace_every is not None:
            self.trace = start_trace(pl_module, trainer.optimizers, self.trace_every)

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self.trace is not None:
            self.trace.batch(batch)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.trace is not None:
            self.trace.close()  # kept: its records, when the run is detached
