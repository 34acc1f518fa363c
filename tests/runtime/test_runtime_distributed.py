"""torchrun with 2 CPU ranks (gloo): one stream of files per rank, combined by sample counts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.records.metrics import MetricSeries
from ledger.runtime.ingest import collect_runtime
from ledger.store import Store

ROOT = Path(__file__).resolve().parents[2]

DDP = """
import os, sys, time, signal
import torch, torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import ledger.runtime as lr
import ledger.torch as lt

dist.init_process_group("gloo")
rank = dist.get_rank()
seeds = lr.seed()
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batch = 3 if rank == 0 else 1  # unequal real sample counts per rank
data = TensorDataset(torch.randn(8 * batch, 4), torch.randn(8 * batch))
loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=1,
                    generator=lt.dataloader_generator(), worker_init_fn=lt.worker_init_fn)
seen = 0
for step, (x, y) in enumerate(loader):
    loss = nn.functional.mse_loss(model(x).squeeze(1), y)
    loss.backward()
    opt.step(); opt.zero_grad()
    seen += len(x)
    lr.log(step=step, samples=seen, n=len(x), loss=loss.item())
    if sys.argv[1] == "kill" and rank == 1 and step == 3:
        lr.current_run().save_rng_state("before-kill", step=step)
        # Wait for the background flusher (no explicit flush) to write steps 0..3.
        mine = lr.current_run().file("metrics", ".jsonl")
        deadline = time.monotonic() + 60
        while b'"s":3,' not in (mine.read_bytes() if mine.exists() else b""):
            assert time.monotonic() < deadline, "the metric flusher never wrote step 3"
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
lr.current_run().save_rng_state("end", step=step)
dist.barrier()
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchrun(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "ddp.py"
    script.write_text(DDP)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "RANK", "WORLD_SIZE"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        LEDGER_RUN_DIR=str(run_dir),
        LEDGER_RUN_ID="20261130T064000-ddp00001",
        OMP_NUM_THREADS="1",
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--nnodes=1",
        "--master_addr=127.0.0.1",
        f"--master_port={_free_port()}",
        str(script),
        mode,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)


@pytest.mark.slow
@pytest.mark.distributed
def test_both_ranks_are_captured_and_combined_by_samples(tmp_path: Path, store: Store) -> None:
    out = _torchrun(tmp_path, "ok")
    assert out.returncode == 0, out.stderr[-3000:]
    cap = collect_runtime(tmp_path / "run", store)
    assert cap.ranks == [0, 1] and cap.world_size == 2
    assert {s.rank for s in cap.seeds} == {0, 1}
    assert len({s.root for s in cap.seeds}) == 1 and cap.seeds[0].root_source == "run-id"
    assert cap.seeds[0].streams["main"] != cap.seeds[1].streams["main"]
    ends = {s.rank: s for s in cap.rng_states if s.label == "end"}
    assert set(ends) == {0, 1} and ends[0].state != ends[1].state  # different streams per rank
    workers = [s for s in cap.rng_states if s.worker is not None]
    assert sorted(s.rank for s in workers) == [0, 1] and workers[0].seed != workers[1].seed

    def series(source: str, rank: int | None) -> MetricSeries:
        (m,) = [
            m for m in cap.metrics if m.name == "loss" and m.source == source and m.rank == rank
        ]
        return MetricSeries.model_validate(store.get_json(m.series))

    r0, r1, both = series("api", 0), series("api", 1), series("combined", None)
    assert r0.step == r1.step == both.step == list(range(8))
    assert both.samples == [4 * (i + 1) for i in range(8)]
    assert both.value == [(a * 3 + b * 1) / 4 for a, b in zip(r0.value, r1.value, strict=True)]


@pytest.mark.slow
@pytest.mark.distributed
def test_a_killed_rank_leaves_ingestible_files(tmp_path: Path, store: Store) -> None:
    out = _torchrun(tmp_path, "kill")
    assert out.returncode != 0
    cap = collect_runtime(tmp_path / "run", store)
    assert 1 in cap.ranks
    (r1,) = [m for m in cap.metrics if m.name == "loss" and m.rank == 1]
    assert r1.count >= 4 and r1.last_step is not None and r1.last_step >= 3
    assert any(s.rank == 1 and s.label == "before-kill" for s in cap.rng_states)
