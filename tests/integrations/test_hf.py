"""The transformers adapter with a real Trainer (a tiny GPT-2 from a config, random token ids,
offline): the Trainer's checkpoints become ledger checkpoints, a resume from one is exact, and
what the Trainer logs lands in the run at its steps, under ``ledger record`` and
``ledger.start``."""

from __future__ import annotations

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

PROG = Path(__file__).with_name("hf_prog.py")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
ENV = {
    "OMP_NUM_THREADS": "1",
    "PYTHONWARNINGS": "ignore",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


@pytest.fixture(autouse=True)
def _framework() -> None:
    # On CI (CI=true) a missing extra fails instead of skipping: .ci/run installs it.
    require_component(
        importlib.util.find_spec("transformers"), "transformers", "pip install 'ledger-repro[hf]'"
    )


def _record(tmp: Path, name: str, *args: str) -> str:
    r = run_ledger(
        "record", "--name", name, "--json", "--", sys.executable, str(PROG), *args, cwd=tmp, **ENV
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _started(tmp: Path, name: str, *args: str) -> str:
    env = subprocess_env(**ENV)
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "LEDGER_SEED_ROOT"):
        env.pop(var, None)
    cmd = [sys.executable, str(PROG), "--start", name, *args]
    r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(run_ledger("ls", "--json", cwd=tmp).stdout)
    return str(next(row["run_id"] for row in rows if row["name"] == name))


def _out(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _losses(out: dict[str, Any]) -> dict[int, float]:
    return {h["step"]: h["loss"] for h in out["log_history"] if "loss" in h}


def _file_entry(store: Store, run_id: str, step: int, name: str) -> Any:
    ckpt = store.get_json(store.refs.get(f"checkpoints/{run_id}/step-{step}") or "")
    shard = store.get_json(ckpt["shards"][0]["manifest"])
    return next(t for t in shard["tensors"] if t["key"] == f"files/{name}")


def test_trainer_checkpoints_resume_bitwise_through_ledger(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    store = Store.open(tmp_path / ".ledger")
    full = _record(tmp_path, "full", "--output-dir", "o-full", "--out", "full.json")
    part = _started(
        tmp_path, "part", "--output-dir", "o-part", "--out", "part.json", "--stop-at", "4"
    )
    res = _record(
        tmp_path, "res", "--output-dir", "o-res", "--out", "res.json", "--resume", f"ledger:{part}"
    )

    a, b, c = (_out(tmp_path / n) for n in ("full.json", "part.json", "res.json"))
    la, lb, lc = _losses(a), _losses(b), _losses(c)
    assert sorted(la) == list(range(1, 13)) and lb == {s: la[s] for s in range(1, 5)}
    assert lc == la  # steps 1-4 come back with the restored trainer state, 5-12 are new
    assert c["weights"] == a["weights"]
    assert _file_entry(store, res, 12, "model.safetensors") == _file_entry(
        store, full, 12, "model.safetensors"
    )

    # The directory written back is the one the Trainer wrote, byte for byte.
    restored, original = (
        tmp_path / "restored" / "checkpoint-4",
        tmp_path / "o-part" / "checkpoint-4",
    )
    names = sorted(p.name for p in original.iterdir())
    assert "rng_state.pth" in names and "optimizer.pt" in names
    assert sorted(p.name for p in restored.iterdir()) == names
    for n in names:
        assert (restored / n).read_bytes() == (original / n).read_bytes(), n

    # Every save of the Trainer is a ledger checkpoint; the resumed run names what it loaded.
    listed = run_ledger("checkpoints", full, "--json", cwd=tmp_path)
    assert [r["step"] for r in json.loads(listed.stdout)] == [4, 8, 12]
    _, part_run = load_run(store, part)
    saved = [(e.event, e.step) for e in part_run.checkpoints]
    assert saved == [("save", 4)]
    _, res_run = load_run(store, res)
    events = [(e.event, e.step, e.mode) for e in res_run.checkpoints]
    assert events == [("load", 4, "resume"), ("save", 8, None), ("save", 12, None)]
    assert res_run.checkpoints[0].checkpoint_digest == part_run.checkpoints[0].checkpoint_digest

    # Metrics at the Trainer's steps: the resumed run logged steps 5-12 itself.
    for run_id, want in ((full, la), (res, {s: la[s] for s in range(5, 13)})):
        _, run = load_run(store, run_id)
        loss = next(m for m in run.metrics if m.name == "loss")
        body = store.get_json(loss.series)
        assert dict(zip(body["step"], body["value"], strict=True)) == want
        assert run.runtime is not None and [s["root"] for s in run.runtime["seeds"]] == [99]
        assert any(n.startswith("rank 0: transformers seed: ") for n in run.notes)
    _, part_run = load_run(store, part)
    assert part_run.runtime is not None and [s["root"] for s in part_run.runtime["seeds"]] == [99]

    # The control: the same resume without the Trainer's RNG file is not exact (dropout).
    _record(
        tmp_path, "ctl", "--output-dir", "o-ctl", "--out", "ctl.json",
        "--resume", str(restored), "--drop-rng",
    )  # fmt: skip
    ctl = _out(tmp_path / "ctl.json")
    assert ctl["weights"] != a["weights"]
    assert {s: v for s, v in _losses(ctl).items() if s > 4} != {s: la[s] for s in range(5, 13)}
