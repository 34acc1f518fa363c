"""``--output`` paths: captured into the store after the run; TensorBoard scalars read from them.

Only what the run wrote is its output. ``snapshot_outputs`` notes, just before launch, every file
already under each ``--output`` (inode, size, mtime and ctime in nanoseconds); after the run a
file whose four values are unchanged was not written by it. Such files are recorded by name as
pre-existing, never stored as outputs, never compared by replay. Writing a file, even with the
same bytes, changes its mtime and ctime; ``touch -d`` can set mtime back but not ctime.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..store import Store
from .tensorboard import find_event_files, read_scalars, scalars_as_points
from .trees import build_tree, put_tree

if TYPE_CHECKING:  # imported where used: a run without --output is sealed without pydantic
    from ..records.metrics import MetricSeries
    from ..records.run import OutputCapture

__all__ = ["OutputsBefore", "capture_outputs", "snapshot_outputs"]

# At most this many pre-existing names are listed per output; the count is always exact.
PREEXISTING_NAMES = 1000

Signature = tuple[int, int, int, int]
# --output as given -> {path relative to the capture base: signature}
OutputsBefore = dict[str, dict[str, Signature]]


def _files_under(path: Path) -> list[Path]:
    if path.is_file() or path.is_symlink():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())


def _signature(path: Path) -> Signature | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _listing(path: Path) -> tuple[Path, dict[str, Path]]:
    """The capture base of an --output and its files by path relative to it."""
    base = path if path.is_dir() else path.parent
    return base, {f.relative_to(base).as_posix(): f for f in _files_under(path)}


def _scan(path: Path) -> dict[str, Signature]:
    """``_listing``'s files with their signatures, in one ``lstat`` each (``os.scandir``): it
    runs just before launch, so it must be quick on large folders."""
    if not path.is_dir() or path.is_symlink():
        sig = _signature(path)
        return {path.name: sig} if sig is not None else {}
    found: dict[str, Signature] = {}
    stack = [(os.fspath(path), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            rel = prefix + e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, rel + "/"))
                    continue
                if not (e.is_symlink() or e.is_file(follow_symlinks=False)):
                    continue
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            found[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return found


def snapshot_outputs(outputs: list[Path], cwd: Path) -> OutputsBefore:
    """What is already under each ``--output`` before the run starts (see the module doc)."""
    before: OutputsBefore = {}
    for given in outputs:
        path = given if given.is_absolute() else cwd / given
        exists = path.exists() or path.is_symlink()
        before[str(given)] = _scan(path) if exists else {}
    return before


def capture_outputs(
    store: Store,
    outputs: list[Path],
    cwd: Path,
    t0_wall: float,
    before: OutputsBefore | None = None,
) -> tuple[list[OutputCapture], list[MetricSeries], list[str]]:
    """Store what the run wrote under each ``--output``; with ``before`` (``snapshot_outputs``
    at launch) files it did not write are named as pre-existing instead."""
    if not outputs:
        return [], [], []
    from ..records.metrics import build_series
    from ..records.run import OutputCapture

    captures: list[OutputCapture] = []
    series: list[MetricSeries] = []
    notes: list[str] = []
    for given in outputs:
        path = given if given.is_absolute() else cwd / given
        if not path.exists() and not path.is_symlink():
            captures.append(OutputCapture(path=str(given), missing=True))
            notes.append(f"--output {given} did not exist after the run")
            continue
        base, files = _listing(path)
        old = (before or {}).get(str(given), {})
        stale = sorted(rel for rel, f in files.items() if rel in old and _signature(f) == old[rel])
        written = sorted(files.keys() - set(stale))
        tree = build_tree(base, written, store)
        captures.append(
            OutputCapture(
                path=str(given),
                tree=put_tree(store, tree),
                files=len(tree.entries),
                bytes=tree.total_size,
                preexisting=stale[:PREEXISTING_NAMES],
                n_preexisting=len(stale),
            )
        )
        if tree.note:  # files the capture could not store: replay cannot vouch for them
            notes.append(f"--output {given}: {tree.note}; replay cannot compare them")
        if stale:
            notes.append(
                f"--output {given}: {len(stale)} file(s) were there before the run and were not "
                "written by it; they are not outputs of this run (see preexisting)"
            )
        fresh = {files[rel] for rel in written}
        for event_file in (e for e in find_event_files(path) if e in fresh):
            scalars, tb_notes = read_scalars(event_file)
            notes += tb_notes
            for tag, points in sorted(scalars_as_points(scalars, t0_wall).items()):
                series.append(build_series(tag, "tensorboard", points))
    return captures, _merge_by_name(series), notes


def _merge_by_name(series: list[MetricSeries]) -> list[MetricSeries]:
    """Several event files (restarts) may log one tag: one series, ordered by step."""
    from ..records.metrics import build_series

    by_name: dict[str, list[MetricSeries]] = {}
    for s in series:
        by_name.setdefault(s.name, []).append(s)
    merged = []
    for name, group in sorted(by_name.items()):
        if len(group) == 1:
            merged.append(group[0])
            continue
        pts = [
            (s.step[i], s.samples[i], s.wall[i], s.value[i])
            for s in group
            for i in range(len(s.value))
        ]
        pts.sort(key=lambda p: p[0] if p[0] is not None else -1)
        merged.append(build_series(name, "tensorboard", pts))
    return merged
