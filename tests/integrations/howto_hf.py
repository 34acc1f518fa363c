"""docs/how-to/transformers.md's set-up, as a user writes it: ``seed_everything``, a model built
after seeding, ``TrainingArguments(output_dir="out", ...)`` and ``LedgerCallback``, run under
``ledger record``, offline; tests/integrations copies it into a git repository as ``train.py``.
``PERTURB_WEIGHT`` (the control) is added to one initial weight.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from ledger.integrations.hf import LedgerCallback, seed_everything


class Tokens(Dataset):
    def __init__(self) -> None:
        self.ids = torch.randint(0, 64, (16, 8), generator=torch.Generator().manual_seed(3))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def build_model():
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        model.lm_head.weight[0, 0] += float(os.environ.get("PERTURB_WEIGHT", "0"))
    return model


torch.set_num_threads(1)
seed = seed_everything(99)
model = build_model()
args = TrainingArguments(
    output_dir="out",
    max_steps=4,
    save_steps=2,
    logging_steps=1,
    seed=seed,
    report_to="none",
    per_device_train_batch_size=4,
    use_cpu=True,
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[LedgerCallback()])
trainer.train()
