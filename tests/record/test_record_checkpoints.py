"""Checkpoints saved and loaded under `ledger record` land in the sealed run, `ledger show` and
`ledger checkpoints`; the recorder keeps every event line it can and says what it could not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.run.contract import checkpoint_events
from ledger.run.find import load_run
from ledger.store import Store

SCRIPT = """
import torch
from ledger.torch import load_checkpoint, save_checkpoint

torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
save_checkpoint({"model": model, "optimizer": opt, "step": 7}, step=7)
fresh = torch.nn.Linear(4, 3)
state = {"model": fresh, "optimizer": torch.optim.SGD(fresh.parameters(), lr=0.1), "step": 0}
loaded = load_checkpoint("latest", state=state)
assert state["step"] == 7 and loaded.mode == "resume"
assert torch.equal(fresh.weight, model.weight)
print("resumed at", state["step"])
"""


@pytest.mark.torch
def test_save_and_resume_are_sealed_shown_and_listed(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(SCRIPT)
    init_ledger(tmp_path)
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(tmp_path / ".ledger"), run_id)
    assert [(e.event, e.mode, e.step, e.run_id) for e in run.checkpoints] == [
        ("save", None, 7, run_id),
        ("load", "resume", 7, run_id),
    ]
    save, load = run.checkpoints
    assert save.checkpoint_digest == load.checkpoint_digest
    assert save.rank == load.rank == 0 and save.world_size == load.world_size == 1
    assert save.bytes_total == save.bytes_new == (12 + 3) * 4
    assert save.time is not None and load.time is not None and save.time <= load.time
    assert not [n for n in run.notes if "checkpoints.jsonl" in n]

    show = run_ledger("show", run_id, cwd=tmp_path, COLUMNS="200")
    assert show.returncode == 0, show.stderr
    lines = [ln.split() for ln in show.stdout.splitlines() if "checkpoint" in ln]
    assert ["checkpoint", "save", "step", "7", "(save)", save.checkpoint_digest] in lines
    assert ["checkpoint", "load", "step", "7", "(resume)", save.checkpoint_digest] in lines

    listed = run_ledger("checkpoints", run_id, "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(row["step"], row["oid"], row["latest"]) for row in rows] == [
        (7, save.checkpoint_digest, True)
    ]


OID = "b3:" + "ab" * 32


def test_event_lines_are_kept_or_noted(tmp_path: Path) -> None:
    lines = [
        # a newer writer's extra key is dropped, the event kept
        {"event": "save", "checkpoint": OID, "step": 1, "rank": 0, "future": 1},
        {"event": "load", "checkpoint": OID, "step": 1, "mode": "resume", "run_id": "r"},
        {"event": "delete", "checkpoint": OID},  # not an event this version knows
        {"event": "save", "checkpoint": "not-an-id"},
        [1, 2],
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines) + "{not json}\n" + '{"event": "sa'
    (tmp_path / "checkpoints.jsonl").write_text(text)
    events, notes = checkpoint_events(tmp_path)
    assert [(e.event, e.step, e.mode, e.run_id) for e in events] == [
        ("save", 1, None, None),
        ("load", 1, "resume", "r"),
    ]
    assert notes == [
        "checkpoints.jsonl: 4 line(s) are not checkpoint events; left out",
        "checkpoints.jsonl: the last line was cut short (the process was killed)",
    ]


def test_no_event_file_means_no_events(tmp_path: Path) -> None:
    assert checkpoint_events(tmp_path) == ([], [])
    (tmp_path / "checkpoints.jsonl").write_text("")
    assert checkpoint_events(tmp_path) == ([], [])


def test_retention_frees_checkpoints_a_sealed_run_mentions(tmp_path: Path) -> None:
    """The run record names checkpoints without keeping them alive: keep_last + gc frees space."""
    from ledger.store.gc import collect_garbage
    from ledger.store.verify import verify_store

    script = (
        "import torch\n"
        "from ledger.torch import save_checkpoint\n"
        "w = torch.nn.Linear(64, 64)\n"
        "for step in range(4):\n"
        "    with torch.no_grad():\n"
        "        w.weight.add_(1.0)\n"
        "    save_checkpoint({'model': w}, step=step, keep_last=2)\n"
    )
    (tmp_path / "ret.py").write_text(script)
    init_ledger(tmp_path)
    r = run_ledger("record", "--json", "--", sys.executable, "ret.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    store = Store.open(tmp_path / ".ledger")
    _, run = load_run(store, run_id)
    saved = [e.checkpoint_digest for e in run.checkpoints if e.event == "save"]
    assert len(saved) == 4
    collect_garbage(store, delete=True, grace_seconds=0)
    assert [store.objects.has(c) for c in saved] == [False, False, True, True]
    assert verify_store(store).ok
