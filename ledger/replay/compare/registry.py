"""The comparator registry: which comparator reads a file, chosen by its name.

A comparator is ``compare(original: Path, replay: Path, settings) -> FileComparison``. The one
with the highest priority whose ``matches(name)`` is true wins; at equal priority the one
registered last wins, so a plugin can take over a built-in. The digest comparator matches every
name at the lowest priority, so every file gets some comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..._hashing import hash_file
from ...errors import UsageError
from ...records.verdict_parts import CompareSettings, FileComparison
from ._common import NotComparable

__all__ = [
    "Comparator",
    "CompareFn",
    "MatchFn",
    "comparator_for",
    "compare_files",
    "register_comparator",
    "registered_comparators",
    "unregister_comparator",
]

MatchFn = Callable[[str], bool]
CompareFn = Callable[[Path, Path, CompareSettings], FileComparison]


@dataclass(frozen=True)
class Comparator:
    name: str
    matches: MatchFn
    compare: CompareFn
    priority: int = 0
    logs: bool = False  # captured logs: skipped unless settings.include_logs


_REGISTRY: list[Comparator] = []


def register_comparator(
    name: str,
    matches: MatchFn,
    compare: CompareFn,
    priority: int = 0,
    *,
    logs: bool = False,
    replace: bool = False,
) -> Comparator:
    """Add a comparator; ``replace=True`` swaps out one already registered under ``name``."""
    if not name or not name.strip():
        raise UsageError("a comparator needs a non-empty name")
    existing = [c for c in _REGISTRY if c.name == name]
    if existing and not replace:
        raise UsageError(
            f"a comparator named {name!r} is already registered",
            hint="pass replace=True to replace it, or choose another name",
        )
    for c in existing:
        _REGISTRY.remove(c)
    comparator = Comparator(name, matches, compare, priority, logs)
    _REGISTRY.append(comparator)
    return comparator


def unregister_comparator(name: str) -> None:
    """Remove a comparator by name (plugins and tests clean up with this)."""
    before = len(_REGISTRY)
    _REGISTRY[:] = [c for c in _REGISTRY if c.name != name]
    if len(_REGISTRY) == before:
        raise UsageError(f"no comparator named {name!r} is registered")


def registered_comparators() -> tuple[Comparator, ...]:
    """In the order they are tried: highest priority first, later registrations first on ties."""
    order = sorted(enumerate(_REGISTRY), key=lambda ic: (-ic[1].priority, -ic[0]))
    return tuple(c for _, c in order)


def comparator_for(name: str) -> Comparator:
    """The comparator for a file called ``name`` (a relative path; only its text is looked at)."""
    for comparator in registered_comparators():
        if comparator.matches(name):
            return comparator
    raise UsageError(f"no comparator matches {name!r}", hint="register a catch-all comparator")


def compare_files(
    original: Path,
    replay: Path,
    settings: CompareSettings | None = None,
    *,
    name: str | None = None,
) -> FileComparison:
    """Compare two files (or two directories of TensorBoard event files).

    ``name`` is the path reported and used to pick the comparator (default: the replay's file
    name). Byte-identical files are reported identical without being opened. A comparator that
    fails reports the file as not comparable rather than ending the whole comparison.
    """
    settings = settings or CompareSettings()
    label = name or original.name or replay.name
    if original.is_dir() or replay.is_dir():
        from .tensorboard import is_event_dir

        if not (is_event_dir(original) and is_event_dir(replay)):
            raise UsageError(
                f"{original} and {replay}: compare_files compares two files, or two "
                "directories of TensorBoard event files",
                hint="use compare_trees to compare directories of files",
            )
        label = name or f"{original.name}/*tfevents*"
        comparator = comparator_for("events.out.tfevents")
    else:
        comparator = comparator_for(label)
    if comparator.logs and not settings.include_logs:
        return FileComparison(
            path=label,
            comparator=comparator.name,
            status="ignored",
            reason="captured log; compared only with include_logs",
        )
    have_a, have_b = original.exists(), replay.exists()
    if not have_a or not have_b:
        if not have_a and not have_b:
            raise UsageError(f"neither {original} nor {replay} exists")
        return FileComparison(
            path=label,
            comparator=comparator.name,
            status="missing-in-original" if not have_a else "missing-in-replay",
            reason=f"no such file in the {'original' if not have_a else 'replay'}",
        )
    if original.is_file() and hash_file(original) == hash_file(replay):
        return FileComparison(
            path=label,
            comparator=comparator.name,
            status="identical",
            total=1,
            unit="files",
            notes=["byte-identical"],
        )
    try:
        result = comparator.compare(original, replay, settings)
    except NotComparable as e:
        return FileComparison(
            path=label, comparator=comparator.name, status="not-comparable", reason=e.reason
        )
    except Exception as e:  # a broken plugin must not sink the whole verdict
        return FileComparison(
            path=label,
            comparator=comparator.name,
            status="not-comparable",
            reason=f"comparator {comparator.name!r} failed: {type(e).__name__}: {e}",
        )
    return result.model_copy(update={"path": label, "comparator": comparator.name})
