"""ledger.seed: recorded roots, stable derivation, per-rank streams, no surprise imports."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from ledger.errors import UsageError
from ledger.runtime import (
    RankInfo,
    Run,
    _warn,
    capture_rng,
    seed,
    seeds,
    set_current_run,
    stream_id,
)
from ledger.runtime.seeds import Seeds, current_seeds, worker_seed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k in (
        "LEDGER_RUN_DIR",
        "LEDGER_RUN_ID",
        "LEDGER_SEED_ROOT",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
    ):
        monkeypatch.delenv(k, raising=False)
    _warn.reset_warnings()
    set_current_run(None)
    seeds._current = None
    yield
    set_current_run(None)
    seeds._current = None


def test_stream_ids_and_derived_seeds_are_stable_test_vectors() -> None:
    # Pinned: changing the derivation would make recorded runs unreplayable.
    assert stream_id("main") == 0xBF28CD64 == zlib.crc32(b"main")
    assert Seeds(1234, "argument", RankInfo(0, 0, 2)).derive("main") == 28399337328485254
    assert worker_seed(1234, 0, "worker:data", 1, 5) == 5032851029661533559
    s0 = Seeds(1234, "argument", RankInfo(0, 0, 2))
    s1 = Seeds(1234, "argument", RankInfo(1, 1, 2))
    assert s0.derive("main") == int(
        np.random.SeedSequence(1234, spawn_key=(stream_id("main"), 0)).generate_state(1, np.uint64)[
            0
        ]
    ) & ((1 << 63) - 1)
    values = {s0.derive("main"), s0.derive("data"), s1.derive("main"), s1.derive("data")}
    assert len(values) == 4
    assert s0.derive("main") == Seeds(1234, "argument", RankInfo(0, 0, 2)).derive("main")


def test_seed_seeds_python_numpy_torch_reproducibly() -> None:
    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    s = seed(42)
    first = draws()
    assert (
        s.root == 42 and s.source == "argument" and s.seeded["main"] == ["python", "numpy", "torch"]
    )
    seed(42)
    assert draws() == first
    seed(43)
    assert draws() != first


def test_env_root_overrides_argument_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEDGER_SEED_ROOT", "777")
    s = seed(5)
    assert s.root == 777 and s.source == "env"
    assert "overrides root=5" in capsys.readouterr().err


def test_drawn_root_is_recorded_per_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_RUN_DIR", str(tmp_path))
    s = seed()
    gen = s.numpy_generator("augment")
    tgen = s.torch_generator("dropout")
    assert s.source == "urandom"
    body = json.loads((tmp_path / "seeds" / "rank-0.json").read_text())
    assert body["root"] == s.root
    assert body["streams"] == {
        "main": s.derive("main"),
        "augment": s.derive("augment"),
        "dropout": s.derive("dropout"),
    }
    state = capture_rng()
    assert "augment" in state.numpy_generators and "dropout" in state.torch_generators
    assert gen.integers(1 << 30) == np.random.default_rng(s.derive("augment")).integers(1 << 30)
    assert (
        torch.rand(1, generator=tgen).item()
        == torch.rand(1, generator=torch.Generator().manual_seed(s.derive("dropout"))).item()
    )


def test_ranks_share_a_root_from_the_run_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_RUN_ID", "20261130T064000-3f9a1c2b")
    monkeypatch.setenv("WORLD_SIZE", "2")
    roots, mains = set(), set()
    for r in ("0", "1"):
        monkeypatch.setenv("RANK", r)
        s = seed()
        roots.add((s.root, s.source))
        mains.add(s.derive("main"))
    assert len(roots) == 1 and roots.pop()[1] == "run-id"
    assert len(mains) == 2


def test_ranks_without_a_shared_root_warn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert seed().source == "urandom-per-rank"
    assert "each rank drew its own root" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [-1, "x", 1.5])
def test_bad_roots_are_usage_errors(bad: object, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError):
        seed(bad)  # type: ignore[arg-type]
    monkeypatch.setenv("LEDGER_SEED_ROOT", str(bad))
    with pytest.raises(UsageError, match="LEDGER_SEED_ROOT"):
        seed()


def test_current_seeds_resolves_a_root_without_seeding(tmp_path: Path) -> None:
    set_current_run(Run(run_dir=tmp_path, rank=RankInfo()))
    before = random.getstate()
    s = current_seeds()
    assert random.getstate() == before and s is current_seeds()
    assert json.loads((tmp_path / "seeds" / "rank-0.json").read_text())["root"] == s.root


def test_import_and_seed_without_torch_never_import_it(tmp_path: Path) -> None:
    code = (
        "import sys, ledger.runtime as lr\n"
        "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\n"
        "s = lr.seed(3); lr.log(step=0, x=1.0); lr.save_rng_state('a')\n"
        "assert 'torch' not in sys.modules, 'seed imported torch'\n"
        "print(s.seeded)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env.update(PYTHONPATH=str(ROOT), LEDGER_RUN_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "['python', 'numpy']" in out.stdout
