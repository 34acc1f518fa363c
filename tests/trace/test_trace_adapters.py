"""The trace option of ``watch`` and of the Lightning and Hugging Face adapters: a real
training (Lightning's Trainer, a transformers callback driven with real arguments) is traced."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from torch import nn  # noqa: E402

from ledger.runtime.run import Run  # noqa: E402
from ledger.torch import watch  # noqa: E402


def test_watch_traces_every_nth_step() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(model, opt, every=5, trace=2, run=Run())
    for _ in range(5):
        loss = model(torch.ones(3, 4)).sum()
        loss.backward()
        w.step(loss)
        opt.step()
        opt.zero_grad()
    w.close()
    assert w.trace is not None
    steps = w.trace.records[1:]
    assert [s["s"] for s in steps] == [0, 2, 4]
    assert all(len(s["fwd"]) == 4 and len(s["grad"]) == 4 for s in steps)
    with pytest.raises(ValueError, match="trace must be >= 1"):
        watch(model, opt, trace=0, run=Run())


@pytest.mark.skipif(not importlib.util.find_spec("lightning"), reason="needs lightning")
@pytest.mark.filterwarnings("ignore")  # Lightning's advice on workers and logging
def test_lightning_callback_traces_training_steps(tmp_path: Path) -> None:
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    from ledger.integrations.lightning import LedgerCallback

    class Tiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))

        def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)  # not self(x): no root forward

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16, 8), torch.randn(16, 1))
    cb = LedgerCallback(checkpoints=False, trace=2)
    trainer = pl.Trainer(
        max_steps=4,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[cb],
    )
    trainer.fit(Tiny(), DataLoader(data, batch_size=4))
    steps = cb.trace.records[1:]
    assert [s["s"] for s in steps] == [0, 2]
    names = [m[0] for m in cb.trace.header["modules"]]
    assert [names[e[0]] for e in steps[0]["fwd"]] == ["net.0", "net.1", "net.2", "net"]
    assert len(steps[0]["param"]) == 4 and "batch" in steps[0]


@pytest.mark.skipif(not importlib.util.find_spec("transformers"), reason="needs transformers")
def test_hf_callback_traces_the_model_the_trainer_passes(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from ledger.integrations.hf import LedgerCallback

    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    cb = LedgerCallback(checkpoints=False, trace=1)
    state, control = TrainerState(), TrainerControl()
    cb.on_train_begin(args, state, control, model=model, optimizer=opt)
    for _ in range(2):
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
    cb.on_train_end(args, state, control, model=model, optimizer=opt)
    steps = cb.trace.records[1:]
    assert [s["s"] for s in steps] == [0, 1]
    assert steps[0]["opt"][0]["lr"] == 1e-3
