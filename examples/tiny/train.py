"""A tiny, deterministic CPU training run: logistic regression on data.csv with torch.

Used by `make demo` (recorded with `ledger record`, then replayed bitwise) and by the tests.
"""

import argparse
import csv
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--lr", type=float, default=0.5)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--out", default="out")
args = parser.parse_args()

torch.manual_seed(args.seed)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

with open("data.csv") as f:
    rows = list(csv.DictReader(f))
x = torch.tensor([[float(r[f"f{i}"]) for i in range(4)] for r in rows])
y = torch.tensor([float(r["label"]) for r in rows])

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    perm = torch.randperm(len(x))
    for i in range(0, len(x), 64):
        idx = perm[i : i + 64]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            model(x[idx]).squeeze(1), y[idx]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        logits = model(x).squeeze(1)
        full = torch.nn.functional.binary_cross_entropy_with_logits(logits, y).item()
        acc = ((logits > 0).float() == y).float().mean().item()
    print(f"epoch {epoch} loss {full:.8f} acc {acc:.6f}", flush=True)

os.makedirs(args.out, exist_ok=True)
torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
