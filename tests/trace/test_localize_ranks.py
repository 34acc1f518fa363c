"""Two runs of a 2-rank torchrun (gloo, DistributedDataParallel) that differ on rank 1 only:
the localization names rank 1, not rank 0, which only received the change through the
gradient all-reduce."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _support import require_component, subprocess_env

from ledger.replay.localize import localize_runs
from ledger.run.find import load_run
from ledger.store import Store

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.distributed, pytest.mark.torch]

SCRIPT = """
import os
import torch
import torch.distributed as dist
from torch import nn
import ledger
from ledger.torch import trace

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)


class Jitter(nn.Module):
    def forward(self, x):
        if rank == 1 and os.environ.get("T_JITTER"):
            return x + 1e-6
        return x


model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), Jitter(), nn.Linear(16, 1))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
tr = trace(model, opt, every=1)
g = torch.Generator().manual_seed(rank)
for step in range(3):
    x, y = torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)
    tr.batch(x, y)
    loss = ((ddp(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    ledger.log(step=step, loss=loss.item())
tr.close()
dist.destroy_process_group()
"""


def _torchrun() -> str:
    beside = Path(sys.executable).with_name("torchrun")
    found = str(beside) if beside.is_file() else shutil.which("torchrun")
    require_component(found, "torchrun", "make install (it comes with torch)")
    assert found is not None
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _record(root: Path, **extra: str) -> str:
    env = subprocess_env(OMP_NUM_THREADS="1", **extra)
    for name in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "ledger", "record", "--json", "--", _torchrun()]
    cmd += ["--nproc_per_node=2", "--nnodes=1", "--master_addr=127.0.0.1"]
    cmd += [f"--master_port={_free_port()}", "train.py"]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


# heavy: a torchrun recording and its traced replay (87 s of a worker under load)
@pytest.mark.heavy
def test_the_first_differing_rank_is_named(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    env = subprocess_env()
    subprocess.run([sys.executable, "-m", "ledger", "init"], cwd=tmp_path, env=env, check=True)
    a = _record(tmp_path)
    b = _record(tmp_path, T_JITTER="1")
    store = Store.open(tmp_path / ".ledger")
    ra, rb = load_run(store, a)[1], load_run(store, b)[1]
    assert sorted(t["rank"] for t in ra.runtime["traces"]) == [0, 1]  # type: ignore[index]
    loc = localize_runs(store, ra, rb)
    assert loc is not None and loc["found"], loc
    assert (loc["rank"], loc["step"], loc["phase"], loc["module"]) == (1, 0, "forward", "2")
    assert loc["line"].startswith("rank 1, step 0: batch identical; forward of 2 (Jitter)")

    again = localize_runs(store, ra, load_run(store, _record(tmp_path))[1])
    assert again is not None and again["found"] is False  # no culprit without a cause
