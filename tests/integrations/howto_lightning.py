"""docs/how-to/lightning.md's set-up, as a user writes it: ``ModelCheckpoint(dirpath="ckpt")``,
``LedgerLogger`` and ``LedgerCallback``, run under ``ledger record``; tests/integrations copies
it into a git repository as ``train.py``.

Test knobs, read from the environment: ``PERTURB_WEIGHT`` adds it to one initial weight (the
control), ``CKPT_DIR`` moves the checkpoints (the how-to's "ckpt" by default), and a first
argument resumes from that checkpoint file (``trainer.fit(..., ckpt_path=...)``).
"""

import os
import sys

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ledger.integrations.lightning import LedgerCallback, LedgerLogger, seed_everything


class MyModule(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1))
        with torch.no_grad():
            self.net[0].weight[0, 0] += float(os.environ.get("PERTURB_WEIGHT", "0"))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(1), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.set_num_threads(1)
seed_everything(1234)
x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
train_loader = DataLoader(TensorDataset(x, x.sum(1)), batch_size=8, shuffle=True)
model = MyModule()
trainer = pl.Trainer(
    max_epochs=2,
    logger=LedgerLogger(),
    callbacks=[
        ModelCheckpoint(dirpath=os.environ.get("CKPT_DIR", "ckpt"), save_top_k=-1),
        LedgerCallback(),
    ],
    accelerator="cpu",
    enable_progress_bar=False,
    enable_model_summary=False,
    log_every_n_steps=1,
)
trainer.fit(model, train_loader, ckpt_path=sys.argv[1] if len(sys.argv) > 1 else None)
