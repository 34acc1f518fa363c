"""The verdict's file rows for one original/replay pair (``compare_run_outputs``): output trees
labelled by the path the user gave, captured logs on request, and checkpoints paired by step,
with the steps a resumed replay does not owe and those retention dropped left out."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.records.run import CheckpointEvent, OutputCapture, Run
from ledger.records.tree import Tree, TreeEntry
from ledger.replay.compare_outputs import compare_run_outputs
from ledger.replay.engine import ReplayOptions
from ledger.store import Store


def _tree(store: Store, files: dict[str, bytes]) -> str:
    entries = [
        TreeEntry(path=p, size=len(data), oid=store.objects.put_bytes(data))
        for p, data in files.items()
    ]
    return store.put_json(Tree(entries=entries, total_size=sum(e.size for e in entries)).to_json())


def _run(store: Store, run_id: str, **fields: Any) -> Run:
    contract = store.objects.put_bytes(b"contract of " + run_id.encode())
    return Run(
        run_id=run_id,
        status="succeeded",
        started=datetime(2026, 11, 30, tzinfo=UTC),
        host="h",
        pid=1,
        contract=contract,
        contract_digest=contract,
        ledger_version="0",
        **fields,
    )


def _rows(store: Store, a: Run, b: Run, tmp_path: Path, **kw: Any) -> list[dict[str, Any]]:
    resumed_at = kw.pop("resumed_at", None)
    return compare_run_outputs(store, a, b, ReplayOptions(**kw), tmp_path / "w", resumed_at)


def _labels(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["path"]: r["status"] for r in rows}


def test_file_and_directory_outputs_are_labelled_by_their_path(
    store: Store, tmp_path: Path
) -> None:
    # A file output's tree holds that one file under its own name; a directory's tree holds its
    # files relative to it, even when it holds only one.
    one = {"layout.txt": b"x"}
    two = {"a.txt": b"a", "b.txt": b"b"}
    top = {"top.txt": b"z"}
    single = {"single.txt": b"y"}
    outputs = [
        OutputCapture(path="out", tree=_tree(store, one)),
        OutputCapture(path="many/", tree=_tree(store, two)),
        OutputCapture(path="top.txt", tree=_tree(store, top)),
        OutputCapture(path="sub/single.txt", tree=_tree(store, single)),
    ]
    a = _run(store, "orig", outputs=outputs)
    b = _run(store, "replay", outputs=outputs)
    rows = _rows(store, a, b, tmp_path)
    assert _labels(rows) == {
        "out/layout.txt": "identical",
        "many/a.txt": "identical",
        "many/b.txt": "identical",
        "top.txt": "identical",
        "sub/single.txt": "identical",
    }
    # An identical row has no difference to show: its detail is the (empty) reason.
    assert all(r["detail"] is None for r in rows)


def test_an_output_the_replay_lacks_is_reported_file_by_file(store: Store, tmp_path: Path) -> None:
    a = _run(store, "orig", outputs=[OutputCapture(path="out", tree=_tree(store, {"m": b"1"}))])
    b = _run(store, "replay")
    assert _labels(_rows(store, a, b, tmp_path)) == {"out/m": "missing-in-replay"}


def test_bitwise_mode_is_passed_to_the_comparators(store: Store, tmp_path: Path) -> None:
    first = {"metrics.json": json.dumps({"loss": 1.0}).encode()}
    near = {"metrics.json": json.dumps({"loss": 1.0 + 1e-12}).encode()}
    a = _run(store, "orig", outputs=[OutputCapture(path="metrics.json", tree=_tree(store, first))])
    b = _run(store, "replay", outputs=[OutputCapture(path="metrics.json", tree=_tree(store, near))])
    (bitwise,) = _rows(store, a, b, tmp_path, mode="bitwise")
    assert (bitwise["path"], bitwise["status"]) == ("metrics.json", "different")
    # A differing row's detail is its first difference, not the reason.
    assert bitwise["detail"] == bitwise["first_difference"]
    assert bitwise["detail"]["key"] == "loss"
    (tolerant,) = _rows(store, a, b, tmp_path, mode="tolerance")
    assert tolerant["status"] == "close"


def test_logs_are_compared_only_when_asked(store: Store, tmp_path: Path) -> None:
    out_a, out_b = store.objects.put_bytes(b"step 1\n"), store.objects.put_bytes(b"step 2\n")
    err = store.objects.put_bytes(b"warning\n")
    a = _run(store, "orig", stdout=out_a, stderr=err)
    b = _run(store, "replay", stdout=out_b, stderr=err)
    assert _rows(store, a, b, tmp_path) == []
    rows = _rows(store, a, b, tmp_path, include_logs=True)
    assert _labels(rows) == {"<stdout>": "different", "<stderr>": "identical"}


def _saves(store: Store, run: str, steps: list[int], *, scale: float = 1.0) -> list[Any]:
    torch = pytest.importorskip("torch")
    from ledger.torch.checkpoint import save_checkpoint

    events = []
    for step in steps:
        state = {"w": torch.full((2,), float(step) * scale)}
        oid = save_checkpoint(state, step=step, store=store, run_id=run, rng=False).oid
        events.append(CheckpointEvent(event="save", checkpoint_digest=oid, step=step))
    return events


@pytest.mark.torch
def test_checkpoints_are_paired_by_step(store: Store, tmp_path: Path) -> None:
    a = _run(store, "orig", checkpoints=_saves(store, "orig", [1, 2]))
    b = _run(store, "replay", checkpoints=_saves(store, "replay", [2, 3], scale=2.0))
    rows = _rows(store, a, b, tmp_path)
    assert _labels(rows) == {
        "checkpoint step 1": "missing-in-replay",
        "checkpoint step 2": "different",
        "checkpoint step 3": "missing-in-original",
    }
    # A step without a checkpoint (a save outside any step) is no pair.
    stepless = _saves(store, "orig", [4])[0].model_copy(update={"step": None})
    c = _run(store, "orig2", checkpoints=[stepless])
    assert _rows(store, c, c, tmp_path) == []


@pytest.mark.torch
def test_a_resumed_replay_owes_only_the_steps_after_its_start(store: Store, tmp_path: Path) -> None:
    saves = _saves(store, "orig", [1, 2, 3])
    a = _run(store, "orig", checkpoints=saves)
    # The replay loads the original's step-2 checkpoint, then saves step 3 itself: the load is
    # no save of the replay's, and steps 1 and 2 are not owed.
    load = CheckpointEvent(event="load", checkpoint_digest=saves[1].checkpoint_digest, step=2)
    b = _run(store, "replay", checkpoints=[load, *_saves(store, "replay", [3])])
    assert _labels(_rows(store, a, b, tmp_path, resumed_at=2)) == {"checkpoint step 3": "identical"}
    # Not resumed: every step of the original is owed.
    assert _labels(_rows(store, a, b, tmp_path)) == {
        "checkpoint step 1": "missing-in-replay",
        "checkpoint step 2": "missing-in-replay",
        "checkpoint step 3": "identical",
    }


@pytest.mark.torch
def test_steps_retention_dropped_from_the_original_are_not_compared(
    store: Store, tmp_path: Path
) -> None:
    saves = _saves(store, "orig", [1, 2])
    gone = saves[0].model_copy(update={"checkpoint_digest": "b3:" + "0" * 64})  # collected
    load = CheckpointEvent(event="load", checkpoint_digest=saves[1].checkpoint_digest, step=5)
    a = _run(store, "orig", checkpoints=[gone, saves[1], load])
    b = _run(store, "replay", checkpoints=_saves(store, "replay", [1, 2, 5]))
    # Step 1's original is gone: the replay's step 1 is left out, not reported as extra. Step 5
    # was only loaded by the original: the replay's save of it is extra.
    assert _labels(_rows(store, a, b, tmp_path)) == {
        "checkpoint step 2": "identical",
        "checkpoint step 5": "missing-in-original",
    }
