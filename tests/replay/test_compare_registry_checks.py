"""Registry edges: names, order, the catch-all, logs, directories and missing files.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import UsageError
from ledger.records.verdict_parts import CompareSettings, FileComparison
from ledger.replay.compare import (
    comparator_for,
    compare_files,
    register_comparator,
    registered_comparators,
    unregister_comparator,
)
from ledger.replay.compare.digest import compare_digests


def _same(a: Path, b: Path, s: CompareSettings) -> FileComparison:
    return FileComparison(path="ignored", comparator="ignored", status="close", total=7)


@pytest.fixture
def cleanup() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        unregister_comparator(name)


def test_an_empty_name_is_refused() -> None:
    with pytest.raises(UsageError, match="non-empty name"):
        register_comparator("", lambda n: True, _same)
    assert "" not in [c.name for c in registered_comparators()]


def test_a_registered_comparator_keeps_what_it_was_given(cleanup: list[str]) -> None:
    c = register_comparator("kv-logs", lambda n: n.endswith(".kvl"), _same, 7, logs=True)
    cleanup.append("kv-logs")
    assert (c.name, c.priority, c.logs, c.compare) == ("kv-logs", 7, True, _same)
    assert comparator_for("x.kvl") is c
    plain = register_comparator("plain", lambda n: False, _same)
    cleanup.append("plain")
    assert (plain.priority, plain.logs) == (0, False)


def test_unregistering_removes_only_that_comparator(cleanup: list[str]) -> None:
    before = [c.name for c in registered_comparators()]
    register_comparator("tmp-a", lambda n: n.endswith(".tmpa"), _same, 3)
    register_comparator("tmp-b", lambda n: n.endswith(".tmpa"), _same, 3)
    cleanup.append("tmp-a")
    assert comparator_for("x.tmpa").name == "tmp-b"  # equal priority: the later one
    unregister_comparator("tmp-b")
    assert comparator_for("x.tmpa").name == "tmp-a"
    assert [c.name for c in registered_comparators() if c.name != "tmp-a"] == before


def test_the_order_is_by_priority_then_latest_first(cleanup: list[str]) -> None:
    register_comparator("lo", lambda n: n.endswith(".ord"), _same, -5)
    register_comparator("hi", lambda n: n.endswith(".ord"), _same, 60)
    register_comparator("hi-later", lambda n: n.endswith(".ord"), _same, 60)
    cleanup.extend(["lo", "hi", "hi-later"])
    order = [c.name for c in registered_comparators()]
    assert order.index("hi-later") < order.index("hi") < order.index("structured")
    assert order.index("logs") < order.index("lo") < order.index("digest")
    assert order[:2] == ["tensorboard", "tensors"]  # 100 each: tensorboard registered later
    assert order[-1] == "digest"
    assert comparator_for("a.ord").name == "hi-later"


@pytest.fixture
def without_catch_all() -> Iterator[None]:
    digest = next(c for c in registered_comparators() if c.name == "digest")
    unregister_comparator("digest")
    try:
        yield
    finally:
        register_comparator("digest", digest.matches, compare_digests, digest.priority)


def test_a_name_no_comparator_matches_is_a_usage_error(without_catch_all: None) -> None:
    with pytest.raises(UsageError, match=r"no comparator matches 'model\.onnx'"):
        comparator_for("model.onnx")


def test_the_replacement_takes_the_old_ones_place(cleanup: list[str], tmp_path: Path) -> None:
    register_comparator("swap", lambda n: n.endswith(".swp1"), _same, 20)
    cleanup.append("swap")
    register_comparator("swap", lambda n: n.endswith(".swp2"), _same, 20, replace=True)
    assert [c.name for c in registered_comparators()].count("swap") == 1
    assert comparator_for("x.swp1").name == "digest"
    assert comparator_for("x.swp2").name == "swap"
    (tmp_path / "a.swp2").write_text("1")
    (tmp_path / "b.swp2").write_text("2")
    result = compare_files(tmp_path / "a.swp2", tmp_path / "b.swp2")
    assert (result.path, result.comparator, result.status, result.total) == (
        "a.swp2",
        "swap",
        "close",
        7,
    )


def test_logs_are_ignored_by_compare_files_unless_included(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "stdout").write_text("one\n")
    (tmp_path / "b" / "stdout").write_text("two\n")
    ignored = compare_files(tmp_path / "a" / "stdout", tmp_path / "b" / "stdout")
    assert (ignored.status, ignored.comparator, ignored.reason) == (
        "ignored",
        "logs",
        "captured log; compared only with include_logs",
    )
    included = compare_files(
        tmp_path / "a" / "stdout",
        tmp_path / "b" / "stdout",
        CompareSettings(include_logs=True),
    )
    assert (included.status, included.mismatches) == ("different", 1)


def test_a_file_missing_on_either_side_says_which(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("[1]")
    first = compare_files(tmp_path / "gone.json", tmp_path / "a.json")
    assert (first.status, first.path, first.reason) == (
        "missing-in-original",
        "gone.json",
        "no such file in the original",
    )
    second = compare_files(tmp_path / "a.json", tmp_path / "gone.json", name="out/a.json")
    assert (second.status, second.path, second.reason) == (
        "missing-in-replay",
        "out/a.json",
        "no such file in the replay",
    )


def test_a_byte_identical_pair_is_identical_whatever_the_comparator(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("not json at all")
    (tmp_path / "b.json").write_text("not json at all")
    same = compare_files(tmp_path / "a.json", tmp_path / "b.json")
    assert (same.status, same.total, same.unit) == ("identical", 1, "files")
    (tmp_path / "c.json").write_text("not json at all!")
    assert compare_files(tmp_path / "a.json", tmp_path / "c.json").status == "not-comparable"


def test_event_directories_are_compared_as_tensorboard(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / f"events.out.tfevents.{side}").write_bytes(b"")
    result = compare_files(tmp_path / "a", tmp_path / "b")
    assert (result.path, result.comparator, result.status) == (
        "a/*tfevents*",
        "tensorboard",
        "identical",
    )
    named = compare_files(tmp_path / "a", tmp_path / "b", name="runs/x")
    assert named.path == "runs/x"


def test_an_event_directory_against_a_plain_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "events.out.tfevents.1").write_bytes(b"")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("x")
    (tmp_path / "f.txt").write_text("x")
    for pair in ((tmp_path / "a", tmp_path / "b"), (tmp_path / "b", tmp_path / "a")):
        with pytest.raises(UsageError, match="TensorBoard"):
            compare_files(*pair)
    with pytest.raises(UsageError, match="TensorBoard"):
        compare_files(tmp_path / "f.txt", tmp_path / "a")


def test_a_registered_comparator_cannot_be_changed_behind_the_registry(
    cleanup: list[str],
) -> None:
    import dataclasses

    c = register_comparator("frozen", lambda n: n.endswith(".frz"), _same, 1)
    cleanup.append("frozen")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.priority = 1000  # type: ignore[misc]
    assert comparator_for("x.frz").priority == 1


def test_the_public_comparator_type_defaults() -> None:
    from ledger.replay.compare import Comparator

    c = Comparator("plain", lambda n: True, _same)
    assert (c.priority, c.logs) == (0, False)
