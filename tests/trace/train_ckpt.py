"""A small MLP with dropout, trained with ledger checkpoints and NO trace: what
`ledger replay --localize` must localize by itself. One cause, changed only in the replay:

T_UNSEEDED_FROM  from this step on, `drop` draws its mask from a generator seeded from the OS
T_LR_FROM        from this step on, the learning rate is halved (deterministic)
T_RACY_FROM      from this step on, `racy` writes with put_ to repeated indices in an order
                 drawn from the OS (which write lands is unspecified: a race on a GPU)
T_BY_HAND        resume by hand from the loaded state dicts (the recording never resumes)
"""

import os

import torch
from torch import nn

import ledger
from ledger.torch import load_checkpoint, save_checkpoint

STEPS, EVERY = 9, 3


class Drop(nn.Module):
    """Dropout; unseeded (os.urandom) from step T_UNSEEDED_FROM on."""

    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        unseeded = self.step >= int(os.environ.get("T_UNSEEDED_FROM", "99"))
        gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        mask = torch.rand(x.shape, generator=gen if unseeded else None) > 0.2
        return x * mask / 0.8


class Racy(nn.Module):
    """Identity; from step T_RACY_FROM on, put_ with each index twice, in a random order."""

    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        if self.step < int(os.environ.get("T_RACY_FROM", "99")):
            return x
        gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        flat = x.reshape(-1)
        order = torch.randperm(flat.numel(), generator=gen)
        index = torch.arange(flat.numel()) // 2
        return torch.zeros_like(flat).put_(index[order], flat[order]).reshape(x.shape)


ledger.seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), Drop(), Racy(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
state = {"model": model, "optimizer": opt, "step": -1}
if ledger.resume_from() and os.environ.get("T_BY_HAND"):  # ledger sees no model: no trace
    got = load_checkpoint(ledger.resume_from()).state
    model.load_state_dict(got["model"])
    opt.load_state_dict(got["optimizer"])
    state["step"] = got["step"]
elif ledger.resume_from():  # ledger replay --from-checkpoint / --localize
    load_checkpoint(ledger.resume_from(), state=state)
for step in range(state["step"] + 1, STEPS):
    model[2].step = model[3].step = step
    for g in opt.param_groups:
        g["lr"] = 0.05 if step >= int(os.environ.get("T_LR_FROM", "99")) else 0.1
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    ledger.log(step=step, loss=loss.item())
    if step % EVERY == EVERY - 1:
        state["step"] = step
        save_checkpoint(state, step=step)
