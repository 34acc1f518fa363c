"""Comparators for a replay's outputs, by content type, behind a pluggable registry.

Built-ins (highest priority first): tensors (.pt/.pth/.ckpt, .safetensors, .npy, .npz),
TensorBoard event files, structured data (JSON, JSON Lines, YAML), tables (CSV, TSV), captured
logs, and a digest comparison for everything else. Stored ``checkpoint`` records are compared
by id (``compare_checkpoints``), not through the registry. See docs/reference/comparators.md.
"""

from __future__ import annotations

from pathlib import Path

from ...records.verdict_parts import (
    CompareSettings,
    Difference,
    FileComparison,
    FileStatus,
    ToleranceSpec,
    TreeComparison,
)
from ._common import NotComparable, tolerance_for
from .checkpoints import compare_checkpoint_steps, compare_checkpoints
from .digest import compare_digests
from .logs import compare_log_files, is_log_file
from .registry import (
    Comparator,
    CompareFn,
    MatchFn,
    comparator_for,
    compare_files,
    register_comparator,
    registered_comparators,
    unregister_comparator,
)
from .structured import compare_structured_files, is_structured_file
from .tables import compare_table_files, is_table_file
from .tensor_names import is_tensor_file
from .tensorboard import compare_tensorboard, is_event_file
from .trees import compare_objects, compare_trees, load_tree

__all__ = [
    "Comparator",
    "CompareFn",
    "CompareSettings",
    "Difference",
    "FileComparison",
    "FileStatus",
    "MatchFn",
    "NotComparable",
    "ToleranceSpec",
    "TreeComparison",
    "comparator_for",
    "compare_checkpoint_steps",
    "compare_checkpoints",
    "compare_files",
    "compare_objects",
    "compare_trees",
    "load_tree",
    "register_comparator",
    "registered_comparators",
    "tolerance_for",
    "unregister_comparator",
]


def compare_tensor_files(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    """The tensor comparator, imported with numpy when a tensor file is first compared."""
    from .tensors import compare_tensor_files as compare

    return compare(original, replay, settings)


def _register_builtins() -> None:
    register_comparator("tensors", is_tensor_file, compare_tensor_files, 100)
    register_comparator("tensorboard", is_event_file, compare_tensorboard, 100)
    register_comparator("structured", is_structured_file, compare_structured_files, 50)
    register_comparator("table", is_table_file, compare_table_files, 50)
    register_comparator("logs", is_log_file, compare_log_files, 40, logs=True)
    register_comparator("digest", lambda name: True, compare_digests, -1000)


_register_builtins()
