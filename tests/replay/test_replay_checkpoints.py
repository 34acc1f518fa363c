"""`ledger replay` compares the checkpoints a run saved with those its replay saved, by step,
and compares captured logs through the comparators when asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SCRIPT = """
import os, torch
import ledger
from ledger.torch import load_checkpoint, save_checkpoint

ledger.seed(0)  # Python, NumPy and torch: their RNG states are saved, and compared
state = {"model": {"w": torch.randn(64, dtype=torch.float64)}, "epoch": 0}
if ledger.resume_from():  # ledger replay --from-checkpoint
    load_checkpoint(ledger.resume_from(), state=state)
for step in range(state["epoch"] + 1, 4):
    w = state["model"]["w"] * 0.5 + float(os.environ.get("NOISE", "0")) * step
    state = {"model": {"w": w}, "epoch": step}
    save_checkpoint(state, step=step)
    print(f"epoch {step} loss {float(w.abs().sum())!r}", flush=True)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    pytest.importorskip("torch")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "ckpt.py").write_text(SCRIPT)
    (root / ".gitignore").write_text(".ledger/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    return root


def _replay(repo: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, object]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=repo, **env)
    start = r.stdout.index("{\n")
    return r.returncode, json.loads(r.stdout[start:])


def _files(verdict: dict[str, object]) -> dict[str, dict[str, object]]:
    files = verdict["files"]
    assert isinstance(files, list)
    return {f["path"]: f for f in files}


def test_replay_compares_checkpoints_by_step(repo: Path) -> None:
    r = run_ledger("record", "--json", "--", sys.executable, "ckpt.py", cwd=repo, NOISE="0")
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]

    code, verdict = _replay(repo, run_id, "--include-logs", NOISE="0")
    files = _files(verdict)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict
    assert files["checkpoint step 1"]["status"] == "identical"
    assert files["checkpoint step 2"]["status"] == "identical"
    assert files["<stdout>"]["status"] == "identical"
    assert files["<stdout>"]["comparator"] == "logs"

    # Noise in the weights: bitwise, the checkpoints (and stdout) differ; within tolerance they
    # are close. The metric series differ too, so the tolerance replay needs the same rtol.
    code, verdict = _replay(repo, run_id, "--include-logs", NOISE="1e-9")
    files = _files(verdict)
    assert code == 1 and verdict["outcome"] == "not-reproduced"
    assert files["checkpoint step 1"]["status"] == "different"
    assert files["checkpoint step 1"]["detail"]["key"] == "model/w"  # type: ignore[index]
    assert files["<stdout>"]["status"] == "different"
    code, verdict = _replay(repo, run_id, "--mode", "tolerance", "--rtol", "1e-6", NOISE="1e-9")
    files = _files(verdict)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict
    assert files["checkpoint step 2"]["status"] == "close"
    assert "<stdout>" not in files  # logs only when asked

    # Resumed from step 1: only the checkpoints after it are owed, and they match exactly.
    code, verdict = _replay(repo, run_id, "--from-checkpoint", "1", NOISE="0")
    files = _files(verdict)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict
    assert sorted(p for p in files if p.startswith("checkpoint")) == [
        "checkpoint step 2",
        "checkpoint step 3",
    ]
    assert {files[p]["status"] for p in files if p.startswith("checkpoint")} == {"identical"}
