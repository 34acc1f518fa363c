"""DVC's own view of an input: the md5 it recorded, and whether the workspace still matches.

Uses DVC's Python API (``dvc.repo.Repo`` to find the output, ``dvc_data``'s ``build`` to hash)
so the md5 is DVC's, ``.dir`` suffix and all, never a re-implementation. ``dvc`` takes a few
tenths of a second to import, so it is imported only when a DVC repository encloses the input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..records.data import DvcInfo

__all__ = ["dvc_info", "find_dvc_root"]


def find_dvc_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a ``.dvc/`` directory."""
    for d in [path, *path.parents]:
        if (d / ".dvc").is_dir():
            return d
    return None


def _same(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or os.path.realpath(a) == os.path.realpath(b)


def _source(out: Any, root: Path) -> str:
    stage_path = Path(out.stage.path)
    if stage_path.suffix != ".dvc":  # a pipeline stage: its hashes live in dvc.lock beside it
        stage_path = stage_path.with_name("dvc.lock")
    return os.path.relpath(stage_path, root)


def dvc_info(abspath: Path) -> DvcInfo | None:
    """DVC's record of ``abspath`` if a DVC repository tracks exactly this path, else None."""
    root = find_dvc_root(abspath if abspath.is_dir() else abspath.parent)
    if root is None:
        return None
    from dvc.repo import Repo  # slow import: only once a DVC repo is known to be there
    from dvc_data.hashfile.build import build

    try:
        repo = Repo(os.fspath(root))
    except Exception as e:  # DVC raises its own error tree; none of it is ours to type
        raise UsageError(
            f"{abspath} is inside the DVC repository {root}, which DVC cannot open: {e}",
            hint="run `dvc doctor` there, or record the input without DVC information",
        ) from None
    with repo:
        out = next((o for o in repo.index.outs if _same(o.fs_path, os.fspath(abspath))), None)
        if out is None:
            return None
        recorded = out.hash_info.value if out.hash_info else None
        _, meta, obj = build(
            out.cache, out.fs_path, out.fs, out.hash_name, ignore=out.dvcignore, dry_run=True
        )
        current = str(obj.hash_info.value)
        return DvcInfo(
            repo_root=os.fspath(root),
            source=_source(out, root),
            hash_name=out.hash_name,
            md5=recorded,
            nfiles=out.meta.nfiles,
            size=out.meta.size,
            workspace_md5=current,
            workspace_nfiles=meta.nfiles,
            workspace_size=meta.size,
            matches=recorded is not None and recorded == current,
        )
