"""The link rule, as a property: for every kind of run, `ledger gc --yes --grace-hours 0`
followed by `ledger replay` still works, and `ledger verify` still passes.

Real git repositories, real `ledger` subprocesses, real gc. Each run kind keeps its replay
material through a different path: stored inputs (file and directory) through content links,
config files, the dirty patch and untracked files through the code snapshot, checkpoints kept by
``keep_last`` through their refs, a DVC-tracked input, a ``ledger.start()`` run, and replay runs
and verdicts themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger, subprocess_env

from ledger.replay.material import check_run_material
from ledger.store import Store

pytestmark = [pytest.mark.slow]

METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"

TRAIN = """
import hashlib, json, pathlib
from helper import SCALE  # untracked
from lib import OFFSET  # tracked, changed since the commit
cfg = json.loads(pathlib.Path("config.json").read_text())
h = hashlib.sha256(pathlib.Path("data.csv").read_bytes())
for p in sorted(pathlib.Path("data").rglob("*")):
    if p.is_file():
        h.update(p.relative_to("data").as_posix().encode() + p.read_bytes())
v = int(h.hexdigest()[:8], 16) / 2**32 * SCALE + OFFSET + cfg["lr"]
pathlib.Path("out").mkdir(exist_ok=True)
pathlib.Path("out/result.txt").write_text(repr(v))
print(f"epoch 0 loss {v!r}")
"""

START = """
import hashlib, pathlib
import ledger
with ledger.start(name="nb", config={"lr": 0.25}, inputs=["data.csv"], outputs=["out_nb"]) as run:
    ledger.seed(3)
    ledger.save_rng_state("begin")
    v = int(hashlib.sha256(pathlib.Path("data.csv").read_bytes()).hexdigest()[:8], 16) / 2**32
    for step in range(3):
        run.log(step=step, loss=v / (step + 1))
    pathlib.Path("out_nb").mkdir(exist_ok=True)
    pathlib.Path("out_nb/r.txt").write_text(repr(v))
"""

CKPT = """
import torch
import ledger
from ledger.torch import load_checkpoint, save_checkpoint
ledger.seed(0)
state = {"model": {"w": torch.randn(16, dtype=torch.float64)}, "epoch": 0}
if ledger.resume_from():
    load_checkpoint(ledger.resume_from(), state=state)
for step in range(state["epoch"] + 1, 5):
    w = state["model"]["w"] * 0.5
    state = {"model": {"w": w}, "epoch": step}
    save_checkpoint(state, step=step, keep_last=2)
    print(f"epoch {step} loss {float(w.abs().sum())!r}", flush=True)
"""


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }


def _sh(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, env=_git_env(), check=True, capture_output=True, timeout=180)


def _record(repo: Path, *args: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", *args, cwd=repo)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(repo: Path, run_id: str, *args: str) -> dict[str, object]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=repo)
    assert r.returncode == 0, (run_id, r.stdout[-2000:], r.stderr[-2000:])
    verdict: dict[str, object] = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == "reproduced", verdict
    return verdict


def _gc_all(repo: Path) -> dict[str, object]:
    """`gc --grace-hours 0`: the dry run must announce what `--yes` then deletes."""
    dry = run_ledger("gc", "--grace-hours", "0", "--json", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    would = json.loads(dry.stdout)
    r = run_ledger("gc", "--yes", "--grace-hours", "0", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    done: dict[str, object] = json.loads(r.stdout)
    assert done["deleted"] == would["unreachable"]
    assert done["freed_bytes"] == would["freed_bytes"]
    return done


def _verify_ok(repo: Path) -> None:
    r = run_ledger("verify", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr


def _all_runs(repo: Path) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = json.loads(
        run_ledger("ls", "--replays", "--json", cwd=repo).stdout
    )
    return runs


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / "start_run.py").write_text(START)
    (root / "lib.py").write_text("OFFSET = 0.0\n")
    # The data is not in git: replay can only get it from the store.
    (root / ".gitignore").write_text(".ledger/\ndata.csv\ndata/\nout/\nout_nb/\n")
    _sh(["git", "init", "-q"], root)
    _sh(["git", "add", "-A"], root)
    _sh(["git", "commit", "-qm", "init"], root)
    (root / "lib.py").write_text("OFFSET = 1.5\n")  # a dirty patch
    (root / "helper.py").write_text("SCALE = 3.0\n")  # an untracked file
    (root / "config.json").write_text('{"lr": 0.125}\n')
    (root / "data.csv").write_text("x,y\n1,2\n3,4\n")
    (root / "data" / "a.txt").write_text("alpha\n")
    (root / "data" / "sub" / "b.bin").write_bytes(bytes(range(256)) * 4)
    init_ledger(root)
    return root


def test_gc_then_replay_every_run_kind(repo: Path) -> None:
    plain = _record(
        repo,
        "--input",
        "data.csv",
        "--input",
        "data",
        "--config",
        "config.json",
        "--output",
        "out",
        "--",
        sys.executable,
        "train.py",
    )
    r = subprocess.run(
        [sys.executable, "start_run.py"],
        cwd=repo,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    started = next(str(x["run_id"]) for x in _all_runs(repo) if x["name"] == "nb")
    # A replay run and its verdict are records too: replay them after gc as well.
    first = _replay(repo, plain)
    replay_run = [str(x) for x in first["replays"]]  # type: ignore[union-attr]
    # A run whose input was deleted since: only its stored copy is left.
    (repo / "data.csv").write_text("x,y\n9,9\n")
    shutil.rmtree(repo / "data")

    report = _gc_all(repo)
    assert report["deleted"], "gc had nothing to delete: the test would prove nothing"
    _verify_ok(repo)

    store = Store.open(repo / ".ledger")
    for run_id in [plain, started, *replay_run]:
        oid = store.refs.get(f"runs/{run_id}")
        assert oid is not None
        material = check_run_material(store, run_id, oid)
        assert material is not None and material.missing == [], material
    verdicts = [name for name, _ in store.refs.iter("verdicts/")]
    assert verdicts and all(store.objects.has(oid) for _, oid in store.refs.iter("verdicts/"))

    _replay(repo, plain)
    _replay(repo, started)
    _replay(repo, replay_run[0])  # a replay run is replayable like any run
    # gc again after those replays, then the original once more.
    _gc_all(repo)
    _verify_ok(repo)
    _replay(repo, plain)


@pytest.mark.torch
def test_gc_keeps_kept_checkpoints_and_replay_resumes(repo: Path) -> None:
    pytest.importorskip("torch")
    (repo / "ckpt.py").write_text(CKPT)
    run_id = _record(repo, "--", sys.executable, "ckpt.py")
    store = Store.open(repo / ".ledger")
    kept = sorted(name for name, _ in store.refs.iter(f"checkpoints/{run_id}/"))
    assert kept == [f"checkpoints/{run_id}/{n}" for n in ("latest", "step-3", "step-4")]

    report = _gc_all(repo)
    assert report["deleted"]  # the checkpoints keep_last dropped
    _verify_ok(repo)
    for _, oid in store.refs.iter(f"checkpoints/{run_id}/"):
        assert store.objects.has(oid)
    _replay(repo, run_id)
    _replay(repo, run_id, "--from-checkpoint", "3")
    _gc_all(repo)
    _verify_ok(repo)
    _replay(repo, run_id, "--from-checkpoint", "4")


@pytest.mark.dvc
def test_gc_then_replay_dvc_tracked_inputs(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "dvcdata" / "sub").mkdir(parents=True)
    (root / "dvcdata" / "a.csv").write_text("x,y\n1,2\n")
    (root / "dvcdata" / "sub" / "b.bin").write_bytes(bytes(range(256)) * 3)
    (root / "read.py").write_text(
        "import hashlib, pathlib\n"
        "h = hashlib.sha256()\n"
        "for p in sorted(pathlib.Path('dvcdata').rglob('*')):\n"
        "    h.update(p.read_bytes() if p.is_file() else b'')\n"
        "print(f'epoch 0 loss {int(h.hexdigest()[:8], 16) / 2**32!r}')\n"
    )
    _sh(["git", "init", "-q"], root)
    _sh([sys.executable, "-m", "dvc", "init", "-q"], root)
    _sh([sys.executable, "-m", "dvc", "add", "-q", "dvcdata"], root)
    (root / ".gitignore").write_text(".ledger/\n")
    _sh(["git", "add", "-A"], root)
    _sh(["git", "commit", "-qm", "data under DVC"], root)
    init_ledger(root)
    stored = _record(root, "--input", "dvcdata", "--", sys.executable, "read.py")
    unstored = _record(
        root, "--no-store-inputs", "--input", "dvcdata", "--", sys.executable, "read.py"
    )
    _gc_all(root)
    _verify_ok(root)
    _replay(root, stored)
    _replay(root, unstored)
