"""Two stored trees compared file by file: added, removed, changed, logs, TensorBoard dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import require_module

from ledger.records.tree import Tree, TreeEntry
from ledger.replay.compare import CompareSettings, compare_objects, compare_trees
from ledger.store import Store


def _tree(store: Store, files: dict[str, bytes], links: dict[str, str] | None = None) -> str:
    entries = [
        TreeEntry(path=p, size=len(data), oid=store.objects.put_bytes(data))
        for p, data in files.items()
    ]
    for p, target in (links or {}).items():
        raw = target.encode()
        entries.append(
            TreeEntry(path=p, type="symlink", size=len(raw), oid=store.objects.put_bytes(raw))
        )
    tree = Tree(entries=entries, total_size=sum(e.size for e in entries))
    return store.put_json(tree.to_json())


def _by_path(result: object) -> dict[str, object]:
    return {f.path: f for f in result.files}  # type: ignore[attr-defined]


def test_added_removed_and_changed_files(store: Store, tmp_path: Path) -> None:
    metrics = {"loss": 1.0, "acc": 0.5}
    original = _tree(
        store,
        {
            "out/metrics.json": json.dumps(metrics).encode(),
            "out/same.bin": b"\x00\x01",
            "out/gone.txt": b"only in the original",
            "out/blob.bin": b"abcdef",
        },
    )
    replay = _tree(
        store,
        {
            "out/metrics.json": json.dumps({"acc": 0.5, "loss": 1.0 + 1e-12}).encode(),
            "out/same.bin": b"\x00\x01",
            "out/new.txt": b"only in the replay",
            "out/blob.bin": b"abcXef",
        },
    )
    result = compare_trees(store, original, replay, CompareSettings(), tmp_path / "work")
    files = {f.path: f for f in result.files}
    assert [f.path for f in result.files] == sorted(files)
    assert files["out/gone.txt"].status == "missing-in-replay"
    assert files["out/new.txt"].status == "missing-in-original"
    assert (files["out/same.bin"].status, files["out/same.bin"].comparator) == (
        "identical",
        "digest",
    )
    assert (files["out/metrics.json"].status, files["out/metrics.json"].comparator) == (
        "close",
        "structured",
    )
    blob = files["out/blob.bin"]
    assert blob.status == "different"
    assert blob.first_difference is not None
    assert blob.first_difference.index == [3]  # first differing byte
    assert result.status == "different"
    assert not result.ok
    assert result.counts == {
        "close": 1,
        "different": 1,
        "identical": 1,
        "missing-in-original": 1,
        "missing-in-replay": 1,
    }
    assert list((tmp_path / "work").iterdir()) == []  # scratch copies are cleaned up


def test_identical_and_close_trees(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"m.json": b'{"x": 1.0}', "w.bin": b"123"})
    b = _tree(store, {"m.json": b'{"x": 1.0000000000001}', "w.bin": b"123"})
    same = compare_trees(store, a, a, CompareSettings(mode="bitwise"), tmp_path)
    assert (same.status, same.ok) == ("identical", True)
    close = compare_trees(store, a, b, CompareSettings(), tmp_path)
    assert (close.status, close.ok) == ("close", True)
    bitwise = compare_trees(store, a, b, CompareSettings(mode="bitwise"), tmp_path)
    assert (bitwise.status, bitwise.ok) == ("different", False)
    assert bitwise.settings.mode == "bitwise"


def test_nothing_captured_on_one_side(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"m.json": b"{}"})
    result = compare_trees(store, a, None, CompareSettings(), tmp_path)
    assert result.counts == {"missing-in-replay": 1}
    assert result.replay is None


def test_logs_are_ignored_unless_included(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"stdout": b"epoch 1\nloss 2.0\n", "train.log": b"t=1\n"})
    b = _tree(store, {"stdout": b"epoch 1\nloss 2.5\nextra\n"})
    ignored = compare_trees(store, a, b, CompareSettings(), tmp_path)
    assert ignored.counts == {"ignored": 2}
    assert (ignored.status, ignored.ok) == ("identical", True)
    included = compare_trees(store, a, b, CompareSettings(include_logs=True), tmp_path)
    files = {f.path: f for f in included.files}
    out = files["stdout"]
    assert (out.comparator, out.status, out.mismatches, out.total) == ("logs", "different", 2, 3)
    assert out.first_difference is not None
    assert out.first_difference.line == 2
    assert (out.first_difference.original, out.first_difference.replay) == (
        "'loss 2.0'",
        "'loss 2.5'",
    )
    assert files["train.log"].status == "missing-in-replay"


def test_compare_objects_for_captured_stdout(store: Store, tmp_path: Path) -> None:
    a = store.objects.put_bytes(b"same\n")
    b = store.objects.put_bytes(b"other\n")
    logs = CompareSettings(include_logs=True)
    assert compare_objects(store, "stdout", a, b, CompareSettings(), tmp_path).status == "ignored"
    assert compare_objects(store, "stdout", a, a, logs, tmp_path).status == "identical"
    assert compare_objects(store, "stdout", a, b, logs, tmp_path).status == "different"
    assert compare_objects(store, "stdout", a, None, logs, tmp_path).status == "missing-in-replay"


def test_missing_object_is_not_comparable(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"m.json": b'{"x": 1}'})
    b_oid = store.objects.put_bytes(b'{"x": 2}')
    b = _tree(store, {"m.json": b'{"x": 2}'})
    store.objects.delete(b_oid)
    result = compare_trees(store, a, b, CompareSettings(), tmp_path)
    assert result.files[0].status == "not-comparable"
    assert result.files[0].reason is not None
    assert "missing" in result.files[0].reason
    assert result.status == "not-comparable"


def test_symlinks(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"f": b"x"}, {"latest": "ckpt-1"})
    b = _tree(store, {"f": b"x"}, {"latest": "ckpt-2"})
    c = _tree(store, {"f": b"x", "latest": b"ckpt-1"})
    assert compare_trees(store, a, a, CompareSettings(), tmp_path).status == "identical"
    targets = _by_path(compare_trees(store, a, b, CompareSettings(), tmp_path))["latest"]
    assert targets.status == "different"  # type: ignore[attr-defined]
    kinds = _by_path(compare_trees(store, a, c, CompareSettings(), tmp_path))["latest"]
    assert kinds.first_difference.description == "latest: symlink vs file"  # type: ignore[attr-defined]


@pytest.mark.torch
def test_tensorboard_dirs_are_paired_whatever_their_names(store: Store, tmp_path: Path) -> None:
    require_module("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    def events(logdir: Path, suffix: str, loss3: float) -> dict[str, bytes]:
        writer = SummaryWriter(log_dir=str(logdir), filename_suffix=suffix)
        for step, loss in enumerate([2.0, 1.5, 1.2, loss3]):
            writer.add_scalar("loss", loss, step)
        writer.close()
        return {f"runs/{logdir.name}/{p.name}": p.read_bytes() for p in logdir.iterdir()}

    a = _tree(store, events(tmp_path / "Nov30_06-40-00_hostA", ".1", 1.0))
    b = _tree(store, events(tmp_path / "Nov30_07-12-09_hostB", ".2", 1.0))
    c = _tree(store, events(tmp_path / "Dec01_01-00-00_hostC", ".3", 0.9))
    same = compare_trees(store, a, b, CompareSettings(mode="bitwise"), tmp_path / "w")
    assert [(f.path, f.comparator, f.status) for f in same.files] == [
        ("runs/Nov30_06-40-00_hostA/*tfevents*", "tensorboard", "identical")
    ]
    assert same.notes == [
        "TensorBoard directory 'runs/Nov30_06-40-00_hostA' paired with the replay's "
        "'runs/Nov30_07-12-09_hostB'"
    ]
    changed = compare_trees(store, a, c, CompareSettings(), tmp_path / "w")
    assert changed.files[0].first_difference is not None
    assert changed.files[0].first_difference.step == 3
