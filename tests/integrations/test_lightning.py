"""The Lightning adapter with real Lightning: exact resume through ``ckpt_path``, metrics at
Lightning's steps, ``ledger record`` and ``ledger.start``, rank zero only under DDP."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, require_component, run_ledger, subprocess_env

from ledger.run.find import load_run
from ledger.store import Store

pytest.importorskip("torch")

PROG = Path(__file__).with_name("lightning_prog.py")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
ENV = {"OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def _env() -> dict[str, str]:
    env = subprocess_env(**ENV)
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "LEDGER_SEED_ROOT"):
        env.pop(var, None)
    return env


@pytest.fixture(autouse=True)
def _framework() -> None:
    # On CI (CI=true) a missing extra fails instead of skipping: .ci/run installs it.
    require_component(
        importlib.util.find_spec("lightning"), "Lightning", "pip install 'ledger-repro[lightning]'"
    )


def _record(tmp: Path, name: str, *args: str) -> str:
    r = run_ledger(
        "record", "--name", name, "--json", "--", sys.executable, str(PROG), *args, cwd=tmp, **ENV
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _started(tmp: Path, name: str, *args: str) -> str:
    """The same program outside ``ledger record``: it makes its own run with ledger.start."""
    cmd = [sys.executable, str(PROG), "--start", name, *args]
    r = subprocess.run(cmd, cwd=tmp, env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return next(
        row["run_id"]
        for row in json.loads(run_ledger("ls", "--json", cwd=tmp).stdout)
        if row["name"] == name
    )


def _out(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _tensors(store: Store, run_id: str, step: int) -> list[Any]:
    ckpt = store.get_json(store.refs.get(f"checkpoints/{run_id}/step-{step}") or "")
    return [store.get_json(s["manifest"])["tensors"] for s in ckpt["shards"]]


def _series(store: Store, run_id: str) -> dict[str, tuple[list[Any], list[Any]]]:
    _, run = load_run(store, run_id)
    out = {}
    for m in run.metrics:
        body = store.get_json(m.series)
        out[m.name] = (body["step"], body["value"])
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_ledger(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """3 epochs in one go with Lightning's CSVLogger beside LedgerLogger, recorded once for
    the tests below, which only read it (its ledger, its pointers in ``ck-full``, ``full.json``,
    the CSV): their own runs go to their own ledgers. The CSVLogger draws no random numbers, so
    the resumes without it still match the run bit for bit."""
    root = tmp_path_factory.mktemp("lightning-full")
    init_ledger(root)
    run_id = _record(
        root, "full", "--epochs", "3", "--ckpt-dir", "ck-full", "--out", "full.json",
        "--csv", "csv",
    )  # fmt: skip
    return root, run_id


def test_resume_through_ckpt_path_is_bitwise_exact(project: Path, full: tuple[Path, str]) -> None:
    """3 epochs in one go == 2 epochs (under ``ledger.start``), exit, then a resume from the
    epoch-2 checkpoint (under ``ledger record``, through the pointer file and through
    ``ledger:<ref>``): every loss after the checkpoint and the final weights are bitwise equal,
    and so are the tensors of the last ledger checkpoints."""
    store = Store.open(project / ".ledger")
    full_root, full_id = full
    full_store = Store.open(full_root / ".ledger")
    part = _started(project, "part", "--epochs", "2", "--ckpt-dir", "ck-part", "--out", "part.json")
    pointer = project / "ck-part" / "epoch=1-step=10.ckpt"
    body = json.loads(pointer.read_text())
    assert body["run_id"] == part and body["step"] == 10
    res = _record(
        project, "res", "--epochs", "3", "--ckpt-dir", "ck-res", "--out", "res.json",
        "--resume", str(pointer),
    )  # fmt: skip
    via_ref = _started(
        project, "via-ref", "--epochs", "3", "--ckpt-dir", "ck-ref", "--out", "ref.json",
        "--resume", f"ledger:checkpoints/{part}/step-10",
    )  # fmt: skip

    a, b = _out(full_root / "full.json"), _out(project / "part.json")
    assert len(a["losses"]) == 15 and b["losses"] == a["losses"][:10]
    for name in ("res.json", "ref.json"):
        c = _out(project / name)
        assert c["losses"] == a["losses"][10:], name
        assert c["weights"] == a["weights"], name
    assert _tensors(store, res, 15) == _tensors(full_store, full_id, 15)
    assert _tensors(store, via_ref, 15) == _tensors(full_store, full_id, 15)

    # The resumed runs name the checkpoint they continued from; the first run saved it.
    _, part_run = load_run(store, part)
    saved = {e.step: e.checkpoint_digest for e in part_run.checkpoints if e.event == "save"}
    assert sorted(saved) == [5, 10] and body["checkpoint"] == saved[10]
    for run_id in (res, via_ref):
        _, run = load_run(store, run_id)
        loads = [(e.mode, e.checkpoint_digest) for e in run.checkpoints if e.event == "load"]
        assert loads == [("resume", saved[10])]
        assert run.runtime is not None and run.runtime["seeds"][0]["root"] == 1234

    # ModelCheckpoint's files are pointers; the checkpoints themselves are in the ledger.
    listed = run_ledger("checkpoints", full_id, "--json", cwd=full_root)
    assert [r["step"] for r in json.loads(listed.stdout)] == [5, 10, 15]
    assert all(p.stat().st_size < 1000 for p in (full_root / "ck-full").iterdir())


def test_lightning_own_checkpoints_do_not_resume_exactly(
    project: Path, full: tuple[Path, str]
) -> None:
    """The control for the test above: Lightning's own ``.ckpt`` holds no RNG states, so the
    same resume without the ledger checkpoint IO draws a different epoch order and dropout."""
    _record(project, "part", "--epochs", "2", "--ckpt-dir", "ck-p", "--out", "p.json", "--plain")
    ckpt = project / "ck-p" / "epoch=1-step=10.ckpt"
    assert ckpt.read_bytes()[:2] == b"PK"  # a torch zip file, not a ledger pointer
    _record(
        project, "res", "--epochs", "3", "--ckpt-dir", "ck-r", "--out", "r.json",
        "--plain", "--resume", str(ckpt),
    )  # fmt: skip
    a = _out(full[0] / "full.json")
    b, c = (_out(project / n) for n in ("p.json", "r.json"))
    assert b["losses"] == a["losses"][:10]
    assert len(c["losses"]) == 5 and c["losses"] != a["losses"][10:]
    assert c["weights"] != a["weights"]


def test_metrics_land_at_lightning_steps(full: tuple[Path, str]) -> None:
    """What LedgerLogger records equals what Lightning's CSVLogger writes, step for step; the
    hyperparameters and the seed are notes of the run. The run is the module's ``full`` (its
    own run of 2 epochs took another Lightning process, ~6 s of CPU, to check the same)."""
    project, run_id = full
    store = Store.open(project / ".ledger")
    want: dict[str, tuple[list[int], list[float]]] = {}
    with open(project / "csv" / "ref" / "version_0" / "metrics.csv") as f:
        for row in csv.DictReader(f):
            for k, v in row.items():
                if k != "step" and v != "":
                    steps, values = want.setdefault(k, ([], []))
                    steps.append(int(row["step"]))
                    values.append(float(v))
    got = _series(store, run_id)
    assert set(got) == set(want) == {"epoch", "train_loss_step", "train_loss_epoch"}
    for name, (steps, values) in want.items():
        assert got[name] == (steps, values), name
    assert got["train_loss_step"][0] == list(range(15))
    losses = [float.fromhex(v) for _, v in _out(project / "full.json")["losses"]]
    assert got["train_loss_step"][1] == losses
    _, run = load_run(store, run_id)
    assert any('lightning hyperparameters: {"lr":0.05,"width":16}' in n for n in run.notes)
    seeds = run.runtime["seeds"] if run.runtime else []
    assert [s["root"] for s in seeds] == [1234] and "lightning" in seeds[0]["streams"]
    assert [s["label"] for s in run.runtime["rng_states"]] == ["lightning-train-start"]


@pytest.mark.distributed
def test_ddp_logs_from_rank_zero_only(project: Path) -> None:
    """Lightning's own DDP launcher (2 CPU processes): metrics come from global rank zero only,
    while seeds and RNG states are recorded per rank (the adapter sets RANK for ledger)."""
    store = Store.open(project / ".ledger")
    run_id = _record(
        project, "ddp", "--epochs", "1", "--ckpt-dir", "ck", "--out", "o.json", "--ddp", "2"
    )
    _, run = load_run(store, run_id)
    assert run.runtime is not None
    assert sorted(s["rank"] for s in run.runtime["seeds"]) == [0, 1]
    assert sorted(s["rank"] for s in run.runtime["rng_states"]) == [0, 1]
    rank0 = [float.fromhex(v) for _, v in _out(project / "o.json")["losses"]]
    rank1 = [float.fromhex(v) for _, v in _out(project / "o.json.rank1")["losses"]]
    assert len(rank0) == len(rank1) == 3 and rank0 != rank1
    series = _series(store, run_id)
    assert series["train_loss_step"] == ([0, 1, 2], rank0)
    assert all(m.rank is None for m in run.metrics)
