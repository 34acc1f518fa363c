"""The key property: resuming in a new process continues training bit for bit.

Each run ends by saving a checkpoint at step N; content addressing makes the comparison exact:
equal tensors have equal object ids, and the JSON state (counters, scheduler, scaler, sampler
cursor, best loss) and RNG states must match too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.store import Store

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
PROG = Path(__file__).with_name("ckpt_train_prog.py")

pytestmark = pytest.mark.torch


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR"):
        env.pop(var, None)
    return env


def _train(ledger: Path, run: str, losses: Path, *args: str, nproc: int = 1) -> None:
    cmd = [sys.executable]
    if nproc > 1:
        cmd += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    cmd += [str(PROG), "--ledger", str(ledger), "--run-id", run, "--losses", str(losses), *args]
    subprocess.run(cmd, env=_env(), check=True, timeout=120, capture_output=True)


def _shards(store: Store, run: str, step: int) -> list[dict[str, Any]]:
    ckpt = store.get_json(store.refs.get(f"checkpoints/{run}/step-{step}") or "")
    return [store.get_json(s["manifest"]) for s in ckpt["shards"]]


def _state(store: Store, shard: dict[str, Any]) -> Any:
    from ledger.torch.checkpoint.codec import decode_state

    return decode_state(store.get_json(shard["state"]), [None] * len(shard["tensors"]))


def _assert_same_state(store: Store, run_a: str, run_b: str, step: int) -> None:
    a, b = _shards(store, run_a, step), _shards(store, run_b, step)
    assert len(a) == len(b)
    for sa, sb in zip(a, b, strict=True):
        assert sa["tensors"] == sb["tensors"]  # weights, optimizer moments, EMA: bitwise
        assert store.get_json(sa["state"]) == store.get_json(sb["state"])  # counters, sampler...
        assert sa["rng"] == sb["rng"]


def test_resume_in_new_process_is_bitwise_identical(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    full, part = tmp_path / "full.txt", tmp_path / "part.txt"
    # 48 samples / batch 4 / accumulation 2 = 6 updates per epoch: step 9 is mid-epoch 2.
    _train(store.root, "full", full, "--until", "16")
    _train(store.root, "part", part, "--until", "9")
    _train(store.root, "part", part, "--until", "16", "--resume-from", "part")

    full_losses = full.read_text().splitlines()
    assert len(full_losses) == 32
    assert part.read_text().splitlines() == full_losses
    _assert_same_state(store, "full", "part", 16)
    state9 = _state(store, _shards(store, "part", 9)[0])
    assert state9["sampler"]["consumed"] == 24 and state9["sampler"]["epoch"] == 1
    assert state9["counters"]["micro"] == 0


def test_background_saves_hold_the_state_of_their_step_and_resume_bitwise(tmp_path: Path) -> None:
    """Background saves at 9 and 16 equal foreground saves of the same run bitwise (training
    went on while they wrote; the last one is never waited for: exit must wait), and a resume
    from the background-saved step 9 reproduces the rest of the run exactly."""
    store = Store.init(tmp_path / ".ledger")
    full, bg, part = tmp_path / "full.txt", tmp_path / "bg.txt", tmp_path / "part.txt"
    _train(store.root, "full", full, "--until", "16", "--save-at", "9")
    _train(store.root, "bg", bg, "--until", "16", "--save-at", "9", "--background")
    assert bg.read_text() == full.read_text()  # saving in the background did not disturb it
    _assert_same_state(store, "full", "bg", 9)
    _assert_same_state(store, "full", "bg", 16)
    part.write_text("".join(ln + "\n" for ln in bg.read_text().splitlines()[:18]))
    _train(store.root, "bg", part, "--until", "16", "--resume-from", "bg", "--resume-step", "9")
    assert part.read_text() == full.read_text()


def test_resume_that_forgets_the_sampler_cursor_diverges(tmp_path: Path) -> None:
    """The comparison above can fail: a resume that restarts the epoch's order differs."""
    store = Store.init(tmp_path / ".ledger")
    full, bad = tmp_path / "full.txt", tmp_path / "bad.txt"
    _train(store.root, "full", full, "--until", "8", "--save-at", "7", "--workers", "0")
    _train(
        store.root,
        "bad",
        bad,
        "--until",
        "8",
        "--resume-from",
        "full",
        "--resume-step",
        "7",
        "--workers",
        "0",
        "--forget-cursor",
    )
    full_after = [ln for ln in full.read_text().splitlines() if int(ln.split()[1]) >= 7]
    assert len(full_after) == len(bad.read_text().splitlines()) == 2
    assert bad.read_text().splitlines() != full_after


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_two_rank_resume_is_bitwise_identical(tmp_path: Path, background: bool) -> None:
    """torchrun, 2 ranks, gloo: the uninterrupted run also saves at step 5 (saving must not
    disturb training); a new torchrun resumes from it. Every rank's shard must match. With
    ``background``, the first run's saves gather and publish from a thread on their own gloo
    group while DDP all-reduces on the default one."""
    store = Store.init(tmp_path / ".ledger")
    full, resumed = tmp_path / "full.txt", tmp_path / "resumed.txt"
    bg = ["--background"] if background else []
    _train(
        store.root, "full", full, "--until", "10", "--save-at", "5", "--workers", "1", *bg, nproc=2
    )
    _train(
        store.root,
        "res",
        resumed,
        "--until",
        "10",
        "--resume-from",
        "full",
        "--resume-step",
        "5",
        "--workers",
        "1",
        nproc=2,
    )
    full_after = [ln for ln in full.read_text().splitlines() if int(ln.split()[1]) >= 5]
    assert sorted(resumed.read_text().splitlines()) == sorted(full_after)
    assert len(full_after) == 2 * 2 * 5  # ranks x micro-batches per update x updates
    _assert_same_state(store, "full", "res", 10)
    ckpt = store.get_json(store.refs.get("checkpoints/full/step-5") or "")
    assert ckpt["world_size"] == 2 and [s["rank"] for s in ckpt["shards"]] == [0, 1]
    ranks = [_state(store, s)["sampler"]["rank"] for s in _shards(store, "full", 5)]
    assert ranks == [0, 1]
