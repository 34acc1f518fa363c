"""A tiny transformers Trainer run for tests/integrations; run as a subprocess, offline.

A 2-layer GPT-2 built from a config (dropout on) trains on random token ids: nothing is
downloaded. Saves a Trainer checkpoint every 4 steps; ``--stop-at`` ends training after a step
(a run cut short); ``--resume`` restores a ledger checkpoint (``ledger:<target>``) or takes a
directory, then continues with ``resume_from_checkpoint``. Writes the Trainer's log history and a
digest of the final weights to ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from torch.utils.data import Dataset
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

import ledger
from ledger.integrations.hf import LedgerCallback, restore_checkpoint, seed_everything


class Tokens(Dataset[dict[str, torch.Tensor]]):
    def __init__(self) -> None:
        g = torch.Generator().manual_seed(3)
        self.ids = torch.randint(0, 64, (48, 16), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class StopAt(TrainerCallback):  # type: ignore[misc]
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if state.global_step >= self.step:
            control.should_training_stop = True


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--output-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stop-at", type=int, default=0)
    p.add_argument("--resume", default=None)
    p.add_argument("--drop-rng", action="store_true")  # delete the Trainer's RNG file: a control
    p.add_argument("--start", default=None)  # wrap training in ledger.start(name=...)
    a = p.parse_args()

    torch.set_num_threads(1)
    seed = seed_everything(99)
    config = GPT2Config(
        vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.2,
        embd_pdrop=0.2, attn_pdrop=0.2,
    )  # fmt: skip
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir=a.output_dir,
        max_steps=12,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        lr_scheduler_type="linear",
        warmup_steps=2,
        logging_steps=1,
        save_strategy="steps",
        save_steps=4,
        seed=seed,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    callbacks: list[Any] = [LedgerCallback()]
    if a.stop_at:
        callbacks.append(StopAt(a.stop_at))
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=callbacks)
    resume: Any = None
    if a.resume:
        if a.resume.startswith("ledger:"):
            resume = str(
                restore_checkpoint(a.resume.removeprefix("ledger:"), output_dir="restored")
            )
        else:
            resume = a.resume
        if a.drop_rng:
            (Path(resume) / "rng_state.pth").unlink()
    scope = ledger.start(name=a.start) if a.start else contextlib.nullcontext()
    with scope:
        trainer.train(resume_from_checkpoint=resume)
    digest = hashlib.sha256()
    for k, v in model.state_dict().items():
        digest.update(k.encode())
        digest.update(v.contiguous().numpy().tobytes())
    out = {"log_history": trainer.state.log_history, "weights": digest.hexdigest()}
    Path(a.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
