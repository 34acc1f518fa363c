"""The ``TrainerCallback`` behind ``ledger.integrations.hf`` (imports ``transformers``)."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

import transformers
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

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
from ._hf_files import capture

__all__ = ["LedgerCallback", "seed_everything"]


def seed_everything(root: int | None) -> int:
    from ..runtime import seed

    set_rank_env()
    seeds = seed(root, purpose="transformers", torch=True)
    value = seeds.derive("transformers") & 0xFFFF_FFFF
    transformers.set_seed(value)
    return int(value)


class LedgerCallback(TrainerCallback):  # type: ignore[misc]
    """Metrics, seeds, an RNG state and ledger copies of the Trainer's checkpoints.

    ``checkpoints=True`` stores each ``checkpoint-<step>/`` directory once the Trainer has
    written it (``on_save``) as ledger checkpoint ``<step>`` of the current run (or ``run_id``,
    ``store``); ``keep_last`` is the ledger's retention, independent of ``save_total_limit``.
    It needs a single process: the Trainer writes a directory from the main process only.
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
        self.saved: list[Any] = []  # CheckpointInfo of each capture by this process
        self.trace_every = trace  # ledger.torch.trace every N steps
        self.trace: Any = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        set_rank_env(args.process_index, args.world_size)
        if self.checkpoints and args.world_size > 1:
            raise UsageError(
                "hf LedgerCallback(checkpoints=True) stores the Trainer's checkpoints from one "
                f"process; this job has {args.world_size}",
                hint="pass LedgerCallback(checkpoints=False) to keep metrics and seeds with the "
                "Trainer's own checkpoints",
            )
        if self.checkpoints:
            check_checkpoint_target(self.store, self.run_id, "hf LedgerCallback(checkpoints=True)")
        record_seeds()
        run = current_run()
        if state.is_world_process_zero:
            run.note(f"transformers seed: {args.seed}, data_seed: {args.data_seed}")
            run.note(hyperparams_note("transformers", args.to_sanitized_dict()))
        run.save_rng_state("transformers-train-begin", step=state.global_step)
        if self.trace_every is not None and kw.get("model") is not None:
            self.trace = start_trace(kw["model"], [kw.get("optimizer")], self.trace_every)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if self.trace is not None:
            self.trace.close()  # kept: its records, when the run is detached

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        values = {
            k: v for k, v in logs.items() if isinstance(v, numbers.Real) and not isinstance(v, bool)
        }
        if values:
            log_values(state.global_step, values)

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if not self.checkpoints or not state.is_world_process_zero:
            return
        folder = Path(str(args.output_dir)) / f"checkpoint-{state.global_step}"
        if not folder.is_dir():  # a hyperparameter search writes under run-<trial>/
            current_run().note(f"transformers checkpoint {folder} not found; not stored")
            return
        self.saved.append(
            capture(
                folder,
                step=state.global_step,
                store=self.store,
                run_id=self.run_id,
                keep_last=self.keep_last,
            )
        )
