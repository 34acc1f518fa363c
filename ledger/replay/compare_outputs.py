"""Compare the ``--output`` trees of an original run and its replay, file by file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records.run import Run
from ..store import Store

if TYPE_CHECKING:
    from .engine import ReplayOptions

__all__ = ["compare_run_outputs"]


def compare_run_outputs(
    store: Store, original: Run, replay: Run, opts: ReplayOptions, workdir: Path
) -> list[dict[str, Any]]:
    from ..records.verdict_parts import CompareSettings, ToleranceSpec
    from .compare.trees import compare_trees

    settings = CompareSettings(
        mode="bitwise" if opts.mode == "bitwise" else "tolerance",
        rtol=opts.rtol,
        atol=opts.atol,
        overrides={k: ToleranceSpec(rtol=r, atol=a) for k, (r, a) in opts.per_metric.items()},
        include_logs=opts.include_logs,
    )
    replayed = {o.path: o for o in replay.outputs}
    results: list[dict[str, Any]] = []
    for out in original.outputs:
        other = replayed.get(out.path)
        cmp = compare_trees(store, out.tree, other.tree if other else None, settings, workdir)
        for f in cmp.files:
            row = f.model_dump(mode="json")
            row["path"] = f"{out.path}/{f.path}" if out.path not in f.path else f.path
            fd = f.first_difference
            row["detail"] = fd.model_dump(mode="json") if fd is not None else f.reason
            results.append(row)
    if opts.include_logs:
        for stream in ("stdout", "stderr"):
            a, b = getattr(original, stream), getattr(replay, stream)
            same = a == b
            results.append(
                {
                    "path": f"<{stream}>",
                    "comparator": "log",
                    "status": "identical" if same else "different",
                    "detail": None if same else "captured output differs",
                }
            )
    return results
