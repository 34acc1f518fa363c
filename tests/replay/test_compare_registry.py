"""The comparator registry: built-ins chosen by name, plugins added, replaced and removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import UsageError
from ledger.records.verdict_parts import CompareSettings, FileComparison
from ledger.replay.compare import (
    NotComparable,
    comparator_for,
    compare_files,
    register_comparator,
    registered_comparators,
    unregister_comparator,
)


@pytest.fixture
def cleanup() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        unregister_comparator(name)


@pytest.mark.parametrize(
    ("name", "comparator"),
    [
        ("model.pt", "tensors"),
        ("a/b/weights.safetensors", "tensors"),
        ("x.NPZ", "tensors"),
        ("runs/exp/events.out.tfevents.1700000000.host.123.0", "tensorboard"),
        ("config.yaml", "structured"),
        ("metrics.jsonl", "structured"),
        ("progress.csv", "table"),
        ("stdout", "logs"),
        ("logs/train.log", "logs"),
        ("model.onnx", "digest"),
    ],
)
def test_builtins_are_chosen_by_name(name: str, comparator: str) -> None:
    assert comparator_for(name).name == comparator


def _parse_key_values(a: Path, b: Path, settings: CompareSettings) -> FileComparison:
    """A toy format: ``key=value`` lines, compared as sets of keys."""
    ka = {line.split("=")[0] for line in a.read_text().splitlines()}
    kb = {line.split("=")[0] for line in b.read_text().splitlines()}
    if not ka or not kb:
        raise NotComparable("empty key=value file")
    differ = len(ka ^ kb)
    return FileComparison(
        path=a.name,
        comparator="ignored-by-registry",
        status="different" if differ else "identical",
        mismatches=differ,
        total=len(ka | kb),
        unit="keys",
    )


def test_custom_comparator(tmp_path: Path, cleanup: list[str]) -> None:
    register_comparator("kv", lambda n: n.endswith(".kv"), _parse_key_values, priority=10)
    cleanup.append("kv")
    (tmp_path / "a.kv").write_text("x=1\ny=2\n")
    (tmp_path / "b.kv").write_text("y=3\nx=4\n")
    (tmp_path / "c.kv").write_text("x=1\n")
    (tmp_path / "empty.kv").write_text("")
    same_keys = compare_files(tmp_path / "a.kv", tmp_path / "b.kv", name="conf/a.kv")
    assert (same_keys.path, same_keys.comparator, same_keys.status) == (
        "conf/a.kv",
        "kv",
        "identical",
    )
    assert compare_files(tmp_path / "a.kv", tmp_path / "c.kv").status == "different"
    refused = compare_files(tmp_path / "a.kv", tmp_path / "empty.kv")
    assert (refused.status, refused.reason) == ("not-comparable", "empty key=value file")


def test_priority_and_replacement(tmp_path: Path, cleanup: list[str]) -> None:
    def digest_says_same(a: Path, b: Path, s: CompareSettings) -> FileComparison:
        return FileComparison(path=a.name, comparator="x", status="identical")

    register_comparator("all-json", lambda n: n.endswith(".json"), digest_says_same, priority=50)
    cleanup.append("all-json")
    assert comparator_for("m.json").name == "all-json"  # equal priority: the later one wins
    with pytest.raises(UsageError, match="already registered"):
        register_comparator("all-json", lambda n: True, digest_says_same)
    register_comparator(
        "all-json", lambda n: n.endswith(".json"), digest_says_same, 10, replace=True
    )
    assert comparator_for("m.json").name == "structured"
    order = [c.name for c in registered_comparators()]
    assert order.index("tensors") < order.index("all-json") < order.index("digest")


def test_a_crashing_comparator_is_reported_not_raised(tmp_path: Path, cleanup: list[str]) -> None:
    def broken(a: Path, b: Path, s: CompareSettings) -> FileComparison:
        raise KeyError("oops")

    register_comparator("broken", lambda n: n.endswith(".brk"), broken, 5)
    cleanup.append("broken")
    (tmp_path / "a.brk").write_text("1")
    (tmp_path / "b.brk").write_text("2")
    result = compare_files(tmp_path / "a.brk", tmp_path / "b.brk")
    assert result.status == "not-comparable"
    assert result.reason == "comparator 'broken' failed: KeyError: 'oops'"


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no comparator named"):
        unregister_comparator("never-registered")
    with pytest.raises(UsageError, match="non-empty name"):
        register_comparator(" ", lambda n: True, _parse_key_values)
    with pytest.raises(UsageError, match="neither"):
        compare_files(tmp_path / "nope.json", tmp_path / "nada.json")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(UsageError, match="TensorBoard"):
        compare_files(tmp_path / "a", tmp_path / "b")
    with pytest.raises(ValueError, match="both rtol and atol"):
        CompareSettings(rtol=0.1)
    with pytest.raises(ValueError, match="finite"):
        CompareSettings(rtol=-1.0, atol=0.0)


def test_missing_and_byte_identical_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("[1]")
    (tmp_path / "b.json").write_text("[1]")
    missing = compare_files(tmp_path / "a.json", tmp_path / "gone.json")
    assert (missing.status, missing.path) == ("missing-in-replay", "a.json")
    same = compare_files(tmp_path / "a.json", tmp_path / "b.json")
    assert (same.status, same.comparator, same.notes) == (
        "identical",
        "structured",
        ["byte-identical"],
    )
