"""The built-in comparators as the package registers them: names, priorities, the log flag.

The priorities are documented (docs/reference/comparators.md) so that a plugin can place itself
among them; written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ledger.replay.compare import CompareSettings, compare_files, registered_comparators


def test_the_builtins_priorities_and_order() -> None:
    builtins = {"tensors", "tensorboard", "structured", "table", "logs", "digest"}
    found = [(c.name, c.priority, c.logs) for c in registered_comparators() if c.name in builtins]
    assert found == [
        ("tensorboard", 100, False),
        ("tensors", 100, False),
        ("table", 50, False),
        ("structured", 50, False),
        ("logs", 40, True),
        ("digest", -1000, False),
    ]


def test_the_catch_all_takes_any_name() -> None:
    digest = next(c for c in registered_comparators() if c.name == "digest")
    assert digest.matches("")
    assert digest.matches("model.onnx")


def test_the_lazy_tensor_comparator_returns_the_comparison(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.save(tmp_path / "b.npy", np.array([0.0, 1.0, 0.0]))
    result = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", CompareSettings())
    assert (result.comparator, result.status, result.mismatches, result.total) == (
        "tensors",
        "different",
        1,
        3,
    )
