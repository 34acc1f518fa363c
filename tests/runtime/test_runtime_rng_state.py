"""save_rng_state / restore: the same subsequent draws, from JSON files written atomically."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from ledger.runtime import RankInfo, Run, _warn, register_generator, set_current_run
from ledger.runtime import rng as rng_mod


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    _warn.reset_warnings()
    set_current_run(None)
    yield
    set_current_run(None)
    rng_mod._numpy_generators.clear()
    rng_mod._torch_generators.clear()


def _draws(tgen: torch.Generator, ngen: np.random.Generator) -> list[object]:
    return [
        random.random(),
        random.gauss(0, 1),
        np.random.rand(3).tolist(),
        torch.rand(4).tolist(),
        torch.randn(2, generator=tgen).tolist(),
        ngen.normal(size=2).tolist(),
        torch.randperm(10).tolist(),
    ]


def test_restoring_a_saved_state_reproduces_every_generator(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo(1, 0, 2))
    tgen = register_generator("shuffle", torch.Generator().manual_seed(5))
    ngen = register_generator("augment", np.random.default_rng(6))
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    _draws(tgen, ngen)  # advance everything, incl. python's cached gauss
    run.save_rng_state("ckpt", step=100)
    expected = _draws(tgen, ngen)
    _draws(tgen, ngen)
    path = tmp_path / "rng" / "rank-1-ckpt-step100.json"
    body = json.loads(path.read_text())
    assert body["label"] == "ckpt" and body["step"] == 100 and body["rank"] == 1
    restored = run.restore_rng_state("ckpt", step=100)
    assert set(restored) >= {"python", "numpy", "torch", "torch:shuffle", "numpy:augment"}
    assert _draws(tgen, ngen) == expected


def test_restore_in_a_fresh_process_state(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    torch.manual_seed(11)
    run.save_rng_state("start")
    a = torch.rand(5).tolist()
    torch.manual_seed(999)
    run.restore_rng_state("start")
    assert torch.rand(5).tolist() == a


def test_bad_labels_are_made_safe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.save_rng_state("../../etc/x y")
    assert [p.name for p in (tmp_path / "rng").iterdir()] == ["rank-0-.._.._etc_x_y.json"]
    assert "was saved as" in capsys.readouterr().err


def test_detached_run_returns_the_state_and_writes_nothing(tmp_path: Path) -> None:
    state = Run(rank=RankInfo()).save_rng_state("x")
    assert state.python is not None and state.torch_cpu is not None
