"""What `ledger replay` decides before and after the replay (``replay/engine.py``), where no
other test looks: a step at which the run saved two checkpoints is no checkpoint to resume
from, a replay that diverged without a trace and without ``--localize`` runs no
localization, and a seeds replay stopped without a verdict leaves its replay runs indexed.
Real `ledger record` and `ledger replay` in a real project."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.index import Index
from ledger.store import Store

# acc is 1.0 when recorded and 2.0 on every replay (the marker, outside the project, is left
# by the first run); no trace, no checkpoint.
DRIFTS = """
import sys
from pathlib import Path
marker = Path(sys.argv[1])
print("epoch 0 acc", 2.0 if marker.exists() else 1.0)
marker.write_text("ran")
"""
METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Saves step 1 once and step 2 twice (a second save of the same step after more work).
TWICE = """
import torch
import ledger
from ledger.torch import save_checkpoint

ledger.seed(0)
w = torch.ones(4, dtype=torch.float64)
save_checkpoint({"w": w, "epoch": 1}, step=1)
save_checkpoint({"w": w * 2, "epoch": 2}, step=2)
save_checkpoint({"w": w * 3, "epoch": 2}, step=2)
print(f"epoch 2 loss {float(w.sum())!r}", flush=True)
"""


def _project(tmp_path: Path, name: str, text: str) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / name).write_text(text)
    init_ledger(proj)
    return proj


def _record(proj: Path, *argv: str, metric: str | None = None) -> str:
    metrics = ("--metric", metric) if metric else ()
    r = run_ledger("record", *metrics, "--json", "--", sys.executable, *argv, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def test_a_diverged_replay_without_trace_or_localize_runs_no_localization(
    tmp_path: Path,
) -> None:
    proj = _project(tmp_path, "drifts.py", DRIFTS)
    run_id = _record(proj, "drifts.py", str(tmp_path / "marker"), metric=METRIC)
    r = run_ledger("replay", run_id, "--json", cwd=proj)
    assert r.returncode == 1, r.stdout + r.stderr
    v = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert v["outcome"] == "not-reproduced"
    assert v["summary"].startswith("not reproduced (bitwise; compared "), v["summary"]
    assert "first divergence at acc step 0: original 1.0, replay 2.0" in v["summary"]
    # Only --localize asks for the two traced passes (or says why there can be none).
    assert "localization" not in v["settings"], v["settings"]["localization"]
    assert "localiz" not in v["summary"], v["summary"]
    assert "localizing" not in r.stderr


@pytest.mark.torch
def test_a_step_with_two_checkpoints_is_refused_listing_both(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    proj = _project(tmp_path, "ckpt.py", TWICE)
    run_id = _record(proj, "ckpt.py")
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    saved = [(c["step"], c["checkpoint_digest"]) for c in shown["run"]["checkpoints"]]
    assert [s for s, _ in saved] == [1, 2, 2] and len({d for _, d in saved}) == 3, saved
    r = run_ledger("replay", run_id, "--from-checkpoint", "2", cwd=proj)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"--from-checkpoint '2' matches 2 checkpoint(s) of run {run_id}" in r.stderr
    listed = ", ".join(f"step {s} {d[:15]}" for s, d in saved)
    assert f"ledger: hint: give a step or id prefix of one it saved: {listed}\n" in r.stderr
    runs = sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir())
    assert runs == [run_id], "a replay ran"


# Takes the seed (ledger.seed), but its metric does not depend on it: two seeds agree exactly.
CONSTANT = """
import random, ledger
ledger.seed(1)
random.random()
print("epoch 0 acc 1.0")
"""


def test_a_seeds_replay_stopped_without_a_verdict_leaves_its_replays_indexed(
    tmp_path: Path,
) -> None:
    proj = _project(tmp_path, "constant.py", CONSTANT)
    run_id = _record(proj, "constant.py", metric=METRIC)
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = ["replay", run_id, "--mode", "seeds", "--seeds", "2", "--workspace-dir", str(ws)]
    r = run_ledger(*argv, cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "the first two replayed seeds gave identical results" in r.stderr, r.stderr
    replays = sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir())
    replays.remove(run_id)
    assert len(replays) == 2
    # The two replay runs stay recorded, and the index has them as the replay left it (no
    # command ran since to catch it up), as a verdict would have put them there.
    db = sqlite3.connect(proj / ".ledger" / "index.sqlite")
    try:
        runs = {row[0]: row[1] for row in db.execute("SELECT run_id, status FROM runs")}
        verdicts = db.execute("SELECT original FROM verdicts").fetchall()
    finally:
        db.close()
    assert runs == {run_id: "succeeded", replays[0]: "succeeded", replays[1]: "succeeded"}
    assert verdicts == []
    with Index(Store.open(proj / ".ledger")) as index:
        assert index.sync() == 0  # nothing in the log it had not folded
    assert list(ws.iterdir()) == []  # their workspaces are removed
