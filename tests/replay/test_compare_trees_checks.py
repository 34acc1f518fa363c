"""Tree comparison edges: the verdict order, symlinks, modes, and TensorBoard directory pairing.

Written against the survivors of mutation testing (scripts/mutation.py). Event files are told by
name alone ("tfevents"), and a directory whose event files have the same object ids is identical
without being read, so most pairing cases need no TensorBoard writer.
"""

from __future__ import annotations

from pathlib import Path

from ledger.records.tree import Tree, TreeEntry
from ledger.records.verdict_parts import FileComparison, TreeComparison
from ledger.replay.compare import CompareSettings, compare_objects, compare_trees, load_tree
from ledger.store import Store

SETTINGS = CompareSettings()


def _tree(
    store: Store,
    files: dict[str, bytes],
    *,
    links: dict[str, str] | None = None,
    executable: set[str] = frozenset(),  # type: ignore[assignment]
    truncated: bool = False,
) -> str:
    entries = [
        TreeEntry(
            path=p, size=len(data), oid=store.objects.put_bytes(data), executable=p in executable
        )
        for p, data in files.items()
    ]
    for p, target in (links or {}).items():
        raw = target.encode()
        entries.append(
            TreeEntry(path=p, type="symlink", size=len(raw), oid=store.objects.put_bytes(raw))
        )
    tree = Tree(entries=entries, total_size=sum(e.size for e in entries), truncated=truncated)
    return store.put_json(tree.to_json())


def _files(result: TreeComparison) -> dict[str, FileComparison]:
    return {f.path: f for f in result.files}


def test_nothing_captured_is_an_empty_tree(store: Store, tmp_path: Path) -> None:
    assert load_tree(store, None) == Tree(entries=[], total_size=0)
    both = compare_trees(store, None, None, SETTINGS, tmp_path / "w")
    assert (both.status, both.ok, both.files, both.counts) == ("identical", True, [], {})
    a = _tree(store, {"m.json": b"{}"})
    only_replay = compare_trees(store, None, a, SETTINGS, tmp_path / "w")
    assert only_replay.counts == {"missing-in-original": 1}
    assert (only_replay.status, only_replay.ok) == ("different", False)


def test_compare_objects_without_either_object(store: Store, tmp_path: Path) -> None:
    oid = store.objects.put_bytes(b"{}")
    none = compare_objects(store, "m.json", None, None, SETTINGS, tmp_path)
    assert (none.status, none.comparator, none.total) == ("identical", "structured", 0)
    first = compare_objects(store, "m.json", None, oid, SETTINGS, tmp_path)
    assert first.status == "missing-in-original"
    second = compare_objects(store, "m.json", oid, None, SETTINGS, tmp_path)
    assert second.status == "missing-in-replay"
    same = compare_objects(store, "m.json", oid, oid, SETTINGS, tmp_path)
    assert (same.status, same.total, same.unit) == ("identical", 1, "files")


def test_compare_objects_makes_its_scratch_dir_and_cleans_it(store: Store, tmp_path: Path) -> None:
    a = store.objects.put_bytes(b'{"x": 1}')
    b = store.objects.put_bytes(b'{"x": 2}')
    work = tmp_path / "deep" / "work"
    result = compare_objects(store, "out/m.json", a, b, SETTINGS, work)
    assert (result.path, result.status, result.comparator) == (
        "out/m.json",
        "different",
        "structured",
    )
    assert list(work.iterdir()) == []
    default = compare_objects(store, "m.json", a, b)  # the store's own tmp dir by default
    assert default.status == "different"
    assert list(store.tmp_dir.iterdir()) == []


def test_a_missing_object_of_either_side_is_not_comparable(store: Store, tmp_path: Path) -> None:
    kept = store.objects.put_bytes(b'{"x": 1}')
    lost = store.objects.put_bytes(b'{"x": 2}')
    store.objects.delete(lost)
    result = compare_objects(store, "m.json", kept, lost, SETTINGS, tmp_path)
    assert (result.status, result.comparator) == ("not-comparable", "structured")
    assert result.reason is not None
    assert lost in result.reason


def test_the_verdict_ranks_different_over_not_comparable_over_close(
    store: Store, tmp_path: Path
) -> None:
    lost = store.objects.put_bytes(b'{"x": 3}')
    a = _tree(store, {"m.json": b'{"x": 1.0}', "n.json": b'{"y": 1}', "d.bin": b"a"})
    b_files = {"m.json": b'{"x": 1.0000000000001}', "n.json": b'{"x": 3}', "d.bin": b"b"}
    b_tree = _tree(store, b_files)
    store.objects.delete(lost)
    worst = compare_trees(store, a, b_tree, SETTINGS, tmp_path)
    assert _files(worst)["n.json"].status == "not-comparable"
    assert _files(worst)["d.bin"].status == "different"
    assert (worst.status, worst.ok) == ("different", False)
    c = _tree(store, {"m.json": b'{"x": 1.0}', "n.json": b'{"y": 1}', "d.bin": b"a"})
    d = _tree(store, {"m.json": b'{"x": 1.0000000000001}', "n.json": b'{"x": 3}', "d.bin": b"a"})
    store.objects.delete(lost)
    unreadable = compare_trees(store, c, d, SETTINGS, tmp_path)
    assert (unreadable.status, unreadable.ok) == ("not-comparable", False)
    assert unreadable.counts == {"close": 1, "identical": 1, "not-comparable": 1}


def test_a_tree_with_a_missing_file_is_different_even_when_the_rest_is_close(
    store: Store, tmp_path: Path
) -> None:
    a = _tree(store, {"m.json": b'{"x": 1.0}', "extra.txt": b"x"})
    b = _tree(store, {"m.json": b'{"x": 1.0000000000001}'})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert result.counts == {"close": 1, "missing-in-replay": 1}
    assert (result.status, result.ok) == ("different", False)


def test_truncated_trees_are_noted(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"f": b"x"}, truncated=True)
    b = _tree(store, {"f": b"x"})
    assert compare_trees(store, a, b, SETTINGS, tmp_path).notes == [
        "the original tree was truncated"
    ]
    assert compare_trees(store, b, a, SETTINGS, tmp_path).notes == ["the replay tree was truncated"]
    assert compare_trees(store, b, b, SETTINGS, tmp_path).notes == []


def test_a_file_the_replay_made_executable_is_noted(store: Store, tmp_path: Path) -> None:
    """The executable bit is noted whichever side set it (a bool compared both ways)."""
    plain = _tree(store, {"run.sh": b"echo"})
    made_executable = _tree(store, {"run.sh": b"echo"}, executable={"run.sh"})
    script = _files(compare_trees(store, plain, made_executable, SETTINGS, tmp_path))["run.sh"]
    assert script.status == "identical"
    assert script.notes == ["executable bit: False vs True"]


def test_equal_symlinks_are_identical_and_a_changed_mode_is_noted(
    store: Store, tmp_path: Path
) -> None:
    a = _tree(store, {"run.sh": b"echo"}, links={"latest": "ckpt-1"}, executable={"run.sh"})
    b = _tree(store, {"run.sh": b"echo"}, links={"latest": "ckpt-1"})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    link = _files(result)["latest"]
    assert (link.comparator, link.status, link.total) == ("symlink", "identical", 1)
    script = _files(result)["run.sh"]
    assert script.status == "identical"
    assert script.notes == ["executable bit: True vs False"]
    assert _files(compare_trees(store, a, a, SETTINGS, tmp_path))["run.sh"].notes == []
    c = _tree(store, {"run.sh": b"echo"}, links={"latest": "ckpt-2"})
    changed = _files(compare_trees(store, a, c, SETTINGS, tmp_path))["latest"]
    assert (changed.status, changed.mismatches, changed.total, changed.unit) == (
        "different",
        1,
        1,
        "files",
    )
    assert changed.first_difference is not None
    assert changed.first_difference.description == "latest: symlink targets differ"
    d = _tree(store, {"run.sh": b"echo"}, links={"latest": "ckpt-1"})
    e = _tree(store, {"run.sh": b"echo", "latest": b"ckpt-1"})
    kinds = _files(compare_trees(store, e, d, SETTINGS, tmp_path))["latest"]
    assert kinds.first_difference is not None
    assert kinds.first_difference.description == "latest: file vs symlink"


EVENTS = b"not read: equal object ids are identical"


def test_event_dirs_under_one_parent_pair_one_to_one(store: Store, tmp_path: Path) -> None:
    a = _tree(
        store,
        {
            "runs/x1/events.out.tfevents.1": EVENTS,
            "logs/y1/events.out.tfevents.1": EVENTS,
        },
    )
    b = _tree(
        store,
        {
            "runs/x2/events.out.tfevents.2": EVENTS,
            "logs/y2/events.out.tfevents.2": EVENTS,
        },
    )
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.status, f.total, f.unit) for f in result.files] == [
        ("logs/y1/*tfevents*", "identical", 1, "files"),
        ("runs/x1/*tfevents*", "identical", 1, "files"),
    ]
    assert result.notes == [
        "TensorBoard directory 'logs/y1' paired with the replay's 'logs/y2'",
        "TensorBoard directory 'runs/x1' paired with the replay's 'runs/x2'",
    ]


def test_the_only_unpaired_event_dirs_pair_across_parents(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"a/run/events.out.tfevents.1": EVENTS, "keep/events.out.tfevents": EVENTS})
    b = _tree(store, {"b/run/events.out.tfevents.2": EVENTS, "keep/events.out.tfevents": EVENTS})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.status) for f in result.files] == [
        ("a/run/*tfevents*", "identical"),
        ("keep/*tfevents*", "identical"),
    ]
    assert result.notes == ["TensorBoard directory 'a/run' paired with the replay's 'b/run'"]


def test_event_files_at_the_top_pair_with_a_dir(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"events.out.tfevents.1": EVENTS})
    b = _tree(store, {"tb/events.out.tfevents.2": EVENTS})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.status) for f in result.files] == [("*tfevents*", "identical")]
    assert result.notes == ["TensorBoard directory '.' paired with the replay's 'tb'"]


def test_unpaired_event_dirs_are_missing(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"p/a1/x.tfevents": EVENTS, "p/a2/x.tfevents": EVENTS})
    b = _tree(store, {"p/b1/x.tfevents": EVENTS})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.status) for f in result.files] == [
        ("p/a1/*tfevents*", "missing-in-replay"),
        ("p/a2/*tfevents*", "missing-in-replay"),
        ("p/b1/*tfevents*", "missing-in-original"),
    ]
    assert result.notes == []
    assert result.status == "different"
    c = _tree(store, {"q/x.tfevents": EVENTS})
    only_replay = compare_trees(store, None, c, SETTINGS, tmp_path)
    assert [(f.path, f.status) for f in only_replay.files] == [
        ("q/*tfevents*", "missing-in-original")
    ]


def test_event_dirs_with_the_same_files_in_another_order_are_identical(
    store: Store, tmp_path: Path
) -> None:
    a = _tree(store, {"tb/e.tfevents.1": b"one", "tb/e.tfevents.2": b"two"})
    b = _tree(store, {"tb/e.tfevents.2": b"one", "tb/e.tfevents.1": b"two"})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.comparator, f.status, f.total) for f in result.files] == [
        ("tb/*tfevents*", "tensorboard", "identical", 2)
    ]


def test_an_event_file_whose_object_is_lost_is_not_comparable(store: Store, tmp_path: Path) -> None:
    a = _tree(store, {"tb/e.tfevents.1": b"one"})
    b = _tree(store, {"tb/e.tfevents.1": b"lost"})
    store.objects.delete(store.objects.put_bytes(b"lost"))
    work = tmp_path / "w"
    result = compare_trees(store, a, b, SETTINGS, work)
    (f,) = result.files
    assert (f.path, f.comparator, f.status) == ("tb/*tfevents*", "tensorboard", "not-comparable")
    assert f.reason is not None
    assert result.status == "not-comparable"
    assert list(work.iterdir()) == []


def test_a_symlink_named_like_an_event_file_is_compared_as_a_symlink(
    store: Store, tmp_path: Path
) -> None:
    a = _tree(store, {}, links={"tb/e.tfevents.1": "x"})
    b = _tree(store, {}, links={"tb/e.tfevents.1": "y"})
    result = compare_trees(store, a, b, SETTINGS, tmp_path)
    assert [(f.path, f.comparator, f.status) for f in result.files] == [
        ("tb/e.tfevents.1", "symlink", "different")
    ]


def test_files_are_copied_out_under_the_work_directory(store: Store, tmp_path: Path) -> None:
    from ledger.replay.compare import register_comparator, unregister_comparator

    seen: list[Path] = []

    def record(a: Path, b: Path, settings: CompareSettings) -> FileComparison:
        seen.extend([a, b])
        return FileComparison(path=a.name, comparator="x", status="identical")

    register_comparator("where", lambda n: n.endswith(".where"), record, 500)
    try:
        a = _tree(store, {"m.where": b"1"})
        b = _tree(store, {"m.where": b"2"})
        work = tmp_path / "work"
        compare_trees(store, a, b, SETTINGS, work)
        compare_objects(
            store, "n.where", store.objects.put_bytes(b"3"), store.objects.put_bytes(b"4")
        )
    finally:
        unregister_comparator("where")
    assert [p.name for p in seen] == ["m.where", "m.where", "n.where", "n.where"]
    assert all(p.is_relative_to(work) for p in seen[:2]), seen
    assert all(p.is_relative_to(store.tmp_dir) for p in seen[2:]), seen
