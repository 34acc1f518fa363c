"""Why a replay may have failed: files the original run read that its workspace lacks.

The original's Reads record (``ledger.capture.reads``) lists every file its program opened for
reading. When the replay ends otherwise than the original, each of those files that is not
there for the replay (a gitignored data file, a file outside the repository that has since
gone) is named in the verdict, with the fix: record with ``--input PATH`` or ``--auto-inputs``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..capture.trees import describe
from ..records.run import Run
from ..store import Store

__all__ = ["lacking", "lacking_text"]

_MAX_CHECKED = 20_000


def lacking(store: Store, run: Run, run_dir: Path) -> list[str]:
    """Paths (as ``--input`` takes them) that ``run`` read and that are not there for a
    replay running in ``run_dir``. Files the run wrote itself are left out."""
    if run.reads is None:
        return []
    try:
        data = store.get_json(run.reads)
    except Exception:  # the verdict is what matters; a damaged record only loses the hint
        return []
    files = data.get("files") if isinstance(data, dict) else None
    out: list[str] = []
    for f in (files if isinstance(files, list) else [])[:_MAX_CHECKED]:
        if not isinstance(f, dict) or f.get("status") == "written":
            continue
        path = f.get("path")
        if not isinstance(path, str) or not path:
            continue
        target = Path(path) if os.path.isabs(path) else run_dir / path
        if not os.path.exists(target):
            out.append(path)
    return out


def lacking_text(paths: list[str]) -> str:
    """One clause for the verdict's summary."""
    fix = " ".join(f"--input {shlex.quote(p)}" for p in paths[:3])
    return (
        describe("the original read files this replay did not have", paths)
        + f"; record the run again with {fix}{' ...' if len(paths) > 3 else ''} or --auto-inputs"
    )
