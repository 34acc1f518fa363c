"""An MLP fed by a 2-worker DataLoader whose samples carry NumPy noise (an augmentation),
traced with the workers' RNG states (tr.loader). Each worker seeds NumPy from its torch seed
(base_seed + id, from the loader's seeded generator); the cause, in the replay only:

T_UNSEEDED_WORKER  worker 1 seeds NumPy from the OS
"""

import os

import numpy as np
import torch
from torch import nn

import ledger
from ledger.torch import trace


class Noisy(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g)

    def __len__(self):
        return 32

    def __getitem__(self, i):
        noise = torch.from_numpy(np.random.normal(0, 0.01, 4).astype("float32"))
        return i, self.x[i] + noise, self.y[i]


def seed_worker(worker_id):
    if worker_id == 1 and os.environ.get("T_UNSEEDED_WORKER"):
        np.random.seed(None)  # from the OS
    else:
        np.random.seed(torch.utils.data.get_worker_info().seed % 2**32)


ledger.seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(
    Noisy(),
    batch_size=8,
    shuffle=True,
    num_workers=2,
    worker_init_fn=seed_worker,
    generator=torch.Generator().manual_seed(0),
)
tr = trace(model, opt, every=1)
for step, (ids, x, y) in enumerate(tr.loader(loader)):
    tr.batch(x, y, ids=ids)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    ledger.log(step=step, loss=loss.item())
