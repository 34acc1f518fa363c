"""Compare two stored file trees (a run's outputs and its replay's), file by file.

Equal object ids are identical without reading anything; other files are copied out of the store
into a scratch directory and handed to the comparator their name selects. TensorBoard event files
are grouped by directory, since their names differ from run to run.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Literal

from ...errors import IntegrityError
from ...records.base import record_from_json
from ...records.tree import Tree, TreeEntry
from ...records.verdict_parts import (
    CompareSettings,
    Difference,
    FileComparison,
    TreeComparison,
)
from ...store import Store
from .registry import comparator_for, compare_files
from .tensorboard import is_event_file

__all__ = ["compare_objects", "compare_trees", "load_tree"]

_BAD = ("different", "missing-in-original", "missing-in-replay")


def load_tree(store: Store, oid: str | None) -> Tree:
    """The Tree record at ``oid``; an empty tree for None (nothing was captured)."""
    if oid is None:
        return Tree(entries=[], total_size=0)
    tree = record_from_json(store.get_json(oid), Tree)
    return tree


def _write(store: Store, oid: str, root: Path, rel: str) -> None:
    """Through the confined primitive, like every other materialisation."""
    from ...capture import confine

    confine.write_file(root, rel, lambda f: store.objects.copy_to(oid, f))


def compare_objects(
    store: Store,
    name: str,
    original: str | None,
    replay: str | None,
    settings: CompareSettings | None = None,
    workdir: Path | None = None,
) -> FileComparison:
    """Compare two stored objects as files called ``name`` (e.g. a run's captured stdout)."""
    settings = settings or CompareSettings()
    comparator = comparator_for(name)
    if comparator.logs and not settings.include_logs:
        return FileComparison(
            path=name,
            comparator=comparator.name,
            status="ignored",
            reason="captured log; compared only with include_logs",
        )
    if original is None or replay is None:
        if original is None and replay is None:
            return FileComparison(path=name, comparator=comparator.name, status="identical")
        return FileComparison(
            path=name,
            comparator=comparator.name,
            status="missing-in-original" if original is None else "missing-in-replay",
        )
    if original == replay:
        return FileComparison(
            path=name, comparator=comparator.name, status="identical", total=1, unit="files"
        )
    base = Path(name).name
    scratch = Path(tempfile.mkdtemp(prefix="compare-", dir=_workdir(store, workdir)))
    try:
        _write(store, original, scratch, f"a/{base}")
        _write(store, replay, scratch, f"b/{base}")
        return compare_files(scratch / "a" / base, scratch / "b" / base, settings, name=name)
    except IntegrityError as e:
        return FileComparison(
            path=name, comparator=comparator.name, status="not-comparable", reason=str(e)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _workdir(store: Store, workdir: Path | None) -> Path:
    path = workdir if workdir is not None else store.tmp_dir
    path.mkdir(parents=True, exist_ok=True)
    return path


def _compare_entry(
    store: Store,
    path: str,
    a: TreeEntry | None,
    b: TreeEntry | None,
    settings: CompareSettings,
    workdir: Path,
) -> FileComparison:
    if a is not None and b is not None and (a.type != b.type or a.type == "symlink"):
        if a.type == b.type and a.oid == b.oid:
            return FileComparison(path=path, comparator="symlink", status="identical", total=1)
        what = "symlink targets differ" if a.type == b.type else f"{a.type} vs {b.type}"
        return FileComparison(
            path=path,
            comparator="symlink",
            status="different",
            mismatches=1,
            total=1,
            unit="files",
            first_difference=Difference(kind="type", description=f"{path}: {what}"),
        )
    result = compare_objects(
        store, path, a.oid if a else None, b.oid if b else None, settings, workdir
    )
    if a is not None and b is not None and a.executable != b.executable:
        note = f"executable bit: {a.executable} vs {b.executable}"
        result = result.model_copy(update={"notes": [*result.notes, note]})
    return result


def _event_dirs(entries: dict[str, TreeEntry]) -> dict[str, list[TreeEntry]]:
    groups: dict[str, list[TreeEntry]] = {}
    for path, entry in entries.items():
        if entry.type == "file" and is_event_file(path):
            groups.setdefault(posixpath.dirname(path), []).append(entry)
    return groups


def _pair_dirs(a: set[str], b: set[str]) -> tuple[list[tuple[str | None, str | None]], list[str]]:
    """Pair event directories: same path; else the only unpaired one under the same parent
    (``runs/<date>_<host>`` names differ between runs); else the only unpaired one at all."""
    pairs: list[tuple[str | None, str | None]] = [(d, d) for d in sorted(a & b)]
    left, right = sorted(a - b), sorted(b - a)
    notes: list[str] = []

    def pair(x: str, y: str) -> None:
        pairs.append((x, y))
        left.remove(x)
        right.remove(y)
        notes.append(f"TensorBoard directory {x or '.'!r} paired with the replay's {y or '.'!r}")

    for parent in sorted({posixpath.dirname(d) for d in left}):
        xs = [d for d in left if posixpath.dirname(d) == parent]
        ys = [d for d in right if posixpath.dirname(d) == parent]
        if len(xs) == 1 and len(ys) == 1:
            pair(xs[0], ys[0])
    if len(left) == 1 and len(right) == 1:
        pair(left[0], right[0])
    pairs += [(x, None) for x in left] + [(None, y) for y in right]
    return pairs, notes


def _compare_event_dir(
    store: Store,
    label: str,
    a: list[TreeEntry],
    b: list[TreeEntry],
    settings: CompareSettings,
    workdir: Path,
) -> FileComparison:
    if not a or not b:
        return FileComparison(
            path=label,
            comparator="tensorboard",
            status="missing-in-original" if not a else "missing-in-replay",
        )
    if Counter(e.oid for e in a) == Counter(e.oid for e in b):
        return FileComparison(
            path=label, comparator="tensorboard", status="identical", total=len(a), unit="files"
        )
    scratch = Path(tempfile.mkdtemp(prefix="compare-tb-", dir=workdir))
    try:
        for side, entries in (("a", a), ("b", b)):
            for e in entries:
                _write(store, e.oid, scratch, f"{side}/{posixpath.basename(e.path)}")
        return compare_files(scratch / "a", scratch / "b", settings, name=label)
    except IntegrityError as e:
        return FileComparison(
            path=label, comparator="tensorboard", status="not-comparable", reason=str(e)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def compare_trees(
    store: Store,
    original: str | None,
    replay: str | None,
    settings: CompareSettings | None = None,
    workdir: Path | None = None,
) -> TreeComparison:
    """Compare two Tree records by oid (None: nothing captured); files sorted by path.

    A file in only one tree is reported "missing-in-…", which makes the trees different.
    """
    settings = settings or CompareSettings()
    work = _workdir(store, workdir)
    ta, tb = load_tree(store, original), load_tree(store, replay)
    notes = [
        f"the {s} tree was truncated" for s, t in (("original", ta), ("replay", tb)) if t.truncated
    ]
    ea = {e.path: e for e in ta.entries}
    eb = {e.path: e for e in tb.entries}
    ga, gb = _event_dirs(ea), _event_dirs(eb)
    grouped = {e.path for g in (*ga.values(), *gb.values()) for e in g}
    files = [
        _compare_entry(store, p, ea.get(p), eb.get(p), settings, work)
        for p in sorted((ea.keys() | eb.keys()) - grouped)
    ]
    pairs, pair_notes = _pair_dirs(set(ga), set(gb))
    notes += pair_notes
    for da, db in pairs:
        directory = da if da is not None else db
        label = f"{directory}/*tfevents*" if directory else "*tfevents*"
        a = ga[da] if da is not None else []
        b = gb[db] if db is not None else []
        files.append(_compare_event_dir(store, label, a, b, settings, work))
    files.sort(key=lambda f: f.path)
    counts: dict[str, int] = dict(Counter(f.status for f in files))
    status: Literal["identical", "close", "different", "not-comparable"]
    if any(f.status in _BAD for f in files):
        status = "different"
    elif "not-comparable" in counts:
        status = "not-comparable"
    elif "close" in counts:
        status = "close"
    else:
        status = "identical"
    return TreeComparison(
        original=original,
        replay=replay,
        settings=settings,
        status=status,
        ok=status in ("identical", "close"),
        counts=counts,
        files=files,
        notes=notes,
    )
