"""``--output`` paths: captured into the store after the run; TensorBoard scalars read from them."""

from __future__ import annotations

from pathlib import Path

from ..records.metrics import MetricSeries, build_series
from ..records.run import OutputCapture
from ..store import Store
from .tensorboard import find_event_files, read_scalars, scalars_as_points
from .trees import build_tree, put_tree

__all__ = ["capture_outputs"]


def _files_under(path: Path) -> list[Path]:
    if path.is_file() or path.is_symlink():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())


def capture_outputs(
    store: Store, outputs: list[Path], cwd: Path, t0_wall: float
) -> tuple[list[OutputCapture], list[MetricSeries], list[str]]:
    captures: list[OutputCapture] = []
    series: list[MetricSeries] = []
    notes: list[str] = []
    for given in outputs:
        path = given if given.is_absolute() else cwd / given
        if not path.exists() and not path.is_symlink():
            captures.append(OutputCapture(path=str(given), missing=True))
            notes.append(f"--output {given} did not exist after the run")
            continue
        base = path if path.is_dir() else path.parent
        files = _files_under(path)
        rels = [f.relative_to(base).as_posix() for f in files]
        tree = build_tree(base, rels, store)
        captures.append(
            OutputCapture(
                path=str(given),
                tree=put_tree(store, tree),
                files=len(tree.entries),
                bytes=tree.total_size,
            )
        )
        for event_file in find_event_files(path):
            scalars, tb_notes = read_scalars(event_file)
            notes += tb_notes
            for tag, points in sorted(scalars_as_points(scalars, t0_wall).items()):
                series.append(build_series(tag, "tensorboard", points))
    return captures, _merge_by_name(series), notes


def _merge_by_name(series: list[MetricSeries]) -> list[MetricSeries]:
    """Several event files (restarts) may log one tag: one series, ordered by step."""
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
