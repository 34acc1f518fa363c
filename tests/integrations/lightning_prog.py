"""A tiny Lightning training for tests/integrations; run as a subprocess.

Dropout, a shuffling DataLoader without its own generator (each epoch's order is drawn from the
global torch RNG), AdamW and a StepLR scheduler: an exact resume needs the weights, optimizer,
scheduler, loop counters and the RNG states. Writes every training loss (float.hex, with its
global step) and a digest of the final weights to ``--out``; ``--csv`` adds Lightning's own
CSVLogger next to LedgerLogger, as a reference for the logged steps and values.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ledger
from ledger.integrations.lightning import LedgerCallback, LedgerLogger, seed_everything


class Tiny(pl.LightningModule):
    def __init__(self, lr: float = 0.05, width: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(8, width), nn.ReLU(), nn.Dropout(0.3), nn.Linear(width, 1)
        )
        self.losses: list[list[Any]] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(1), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.losses.append([self.global_step, loss.item().hex()])
        return loss

    def configure_optimizers(self) -> Any:
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return [opt], [sched]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--ckpt-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--resume", default=None)
    p.add_argument("--plain", action="store_true")  # Lightning's own checkpoints, no ledger IO
    p.add_argument("--start", default=None)  # wrap training in ledger.start(name=...)
    p.add_argument("--csv", default=None)
    p.add_argument("--ddp", type=int, default=0)  # processes of Lightning's own DDP launcher
    a = p.parse_args()

    torch.set_num_threads(1)
    seed_everything(1234)
    g = torch.Generator().manual_seed(42)
    x = torch.randn(40, 8, generator=g)
    y = (x @ torch.randn(8, 1, generator=g)).squeeze(1)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model = Tiny()
    loggers: list[Any] = [LedgerLogger()]
    if a.csv:
        loggers.append(CSVLogger(a.csv, name="ref", version=0))
    trainer = pl.Trainer(
        max_epochs=a.epochs,
        accelerator="cpu",
        devices=a.ddp or 1,
        strategy="ddp" if a.ddp else "auto",
        logger=loggers,
        callbacks=[
            ModelCheckpoint(dirpath=a.ckpt_dir, filename="{epoch}-{step}", save_top_k=-1),
            LedgerCallback(checkpoints=not (a.plain or a.ddp)),
        ],
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=1,
    )
    scope = ledger.start(name=a.start) if a.start else contextlib.nullcontext()
    with scope:
        trainer.fit(model, loader, ckpt_path=a.resume)
    out = Path(a.out) if trainer.global_rank == 0 else Path(f"{a.out}.rank{trainer.global_rank}")
    digest = hashlib.sha256()
    for k, v in model.state_dict().items():
        digest.update(k.encode())
        digest.update(v.numpy().tobytes())
    out.write_text(json.dumps({"losses": model.losses, "weights": digest.hexdigest()}))


if __name__ == "__main__":
    main()
