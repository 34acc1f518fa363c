"""A real training loop (shuffling, 2 DataLoader workers, augmentation) is bitwise replayable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from ledger.runtime.ingest import collect_runtime
from ledger.store import Store

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import random, sys
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
import ledger.runtime as lr
import ledger.torch as lt

lr.seed()  # the root comes from LEDGER_SEED_ROOT
lt.deterministic(threads=1)
X, Y = torch.load(sys.argv[1])

class Augmented(Dataset):
    def __len__(self):
        return len(X)
    def __getitem__(self, i):
        x = X[i] + 0.1 * torch.randn(X.shape[1]) + float(np.random.uniform(-0.05, 0.05))
        if random.random() < 0.5:
            x = x.flip(0)
        return x, Y[i]

loader = DataLoader(Augmented(), batch_size=24, shuffle=True, num_workers=2,
                    generator=lt.dataloader_generator(), worker_init_fn=lt.worker_init_fn)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
w = lt.watch(model, opt, every=4, clip=5.0)
step = seen = 0
for epoch in range(2):
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb).squeeze(1), yb)
        loss.backward()
        w.step(loss)
        opt.step()
        opt.zero_grad()
        seen += len(xb)
        lr.log(step=step, samples=seen, n=len(xb), loss=loss.item(), epoch=epoch)
        step += 1
    lr.current_run().save_rng_state("epoch", step=step)
"""


def _train(tmp: Path, name: str, data: Path, root: int) -> Path:
    run_dir = tmp / name
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env.update(
        PYTHONPATH=str(ROOT),
        LEDGER_RUN_DIR=str(run_dir),
        LEDGER_RUN_ID=name,
        LEDGER_SEED_ROOT=str(root),
    )
    out = subprocess.run(
        [sys.executable, "-c", TRAIN, str(data)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return run_dir


def _values(run_dir: Path) -> list[tuple[Any, ...]]:
    lines = (run_dir / "metrics" / "rank-0.jsonl").read_text().splitlines()
    points = [json.loads(line) for line in lines]
    return [
        (p["s"], p.get("x"), p.get("n"), json.dumps(p["v"], sort_keys=True))
        for p in points
        if "v" in p
    ]


@pytest.mark.slow
def test_same_root_same_bits_different_root_different(tmp_path: Path, store: Store) -> None:
    g = torch.Generator().manual_seed(0)
    data = tmp_path / "data.pt"
    torch.save((torch.randn(96, 8, generator=g), torch.randn(96, generator=g)), data)
    a = _train(tmp_path, "a", data, 1234)
    b = _train(tmp_path, "b", data, 1234)
    c = _train(tmp_path, "c", data, 1235)
    va, vb, vc = _values(a), _values(b), _values(c)
    assert len(va) == 8 + 2 + 2  # 8 steps; watch at steps 0 and 4, each with its update ratio
    assert va == vb  # floats printed with repr: bitwise equal
    assert [v for v in va if "loss" in v[3]] != [v for v in vc if "loss" in v[3]]

    cap = collect_runtime(a, store)
    workers = [s for s in cap.rng_states if s.worker is not None]
    assert sorted(s.worker or 0 for s in workers) == [0, 0, 1, 1]  # 2 workers x 2 epochs
    assert len({s.seed for s in workers}) == 4  # every worker of every epoch its own stream
    assert [s.step for s in cap.rng_states if s.worker is None] == [4, 8]
    assert cap.seeds[0].root == 1234 and cap.seeds[0].root_source == "env"
    assert cap.determinism[0].settings.deterministic_algorithms
    assert [s.seed for s in workers] == [
        s.seed for s in collect_runtime(b, store).rng_states if s.worker is not None
    ]
