"""Trains the head of a small model; two checkpoints with ledger.torch (how-to/checkpoints)."""

import torch

from ledger.torch.checkpoint import save_checkpoint

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
head = model[2]
opt = torch.optim.SGD(head.parameters(), lr=0.1)  # only the head trains: the body dedups
x, y = torch.randn(32, 64), torch.randn(32, 8)
for step in range(1, 21):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        save_checkpoint({"model": model, "optimizer": opt, "step": step}, step=step)
