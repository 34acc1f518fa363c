"""DVC's own view of an input: the md5 it recorded, whether the workspace still matches, and
getting the data back out of DVC's cache for a replay.

Uses DVC's Python API (``dvc.repo.Repo`` to find the output and the cache, ``dvc_data``'s
``build`` to hash and ``load`` to read a directory object) so the md5 is DVC's, ``.dir`` suffix
and all, never a re-implementation. ``dvc`` takes a few tenths of a second to import, so it is
imported only when a DVC repository encloses the input, or a replay needs DVC's cache.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, BinaryIO, Literal

from ..errors import MissingObjectError, ReplayError, UsageError
from ..records.data import DvcInfo
from ..records.tree import safe_relpath

__all__ = ["dvc_info", "find_dvc_root", "restore_from_dvc"]


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


def _open_cache(info: DvcInfo) -> tuple[Any, Any]:
    """(repo, object database) of the repository the input was recorded in."""
    root = Path(info.repo_root)
    if not (root / ".dvc").is_dir():
        raise MissingObjectError(
            info.workspace_md5, f"the DVC repository {root} it was recorded in is gone"
        )
    from dvc.repo import Repo

    try:
        repo = Repo(os.fspath(root))
    except Exception as e:  # DVC's own error tree
        raise MissingObjectError(
            info.workspace_md5, f"DVC cannot open the repository {root}: {e}"
        ) from None
    # DVC 3 keeps md5 objects under cache/files/md5; DVC 2's md5-dos2unix ones at the top.
    odb = repo.cache.legacy if info.hash_name == "md5-dos2unix" else repo.cache.local
    return repo, odb


def _copy(src: str, root: Path, rel: str, what: str, oid: str) -> None:
    """Copy a cache file to ``root/rel`` through the confined primitive: a fresh private copy
    (DVC links cache files read-only), never written through a symlink on the way."""
    from . import confine

    if not os.path.isfile(src):
        raise MissingObjectError(oid, f"{what} (DVC md5 {oid}) is not in the DVC cache")

    def fill(f: BinaryIO) -> None:
        with open(src, "rb") as s:
            shutil.copyfileobj(s, f)

    confine.write_file(root, rel, fill, replace=True)


def restore_from_dvc(info: DvcInfo, kind: Literal["file", "dir"], dest: Path) -> int:
    """Write the data DVC hashed when the run was recorded (``workspace_md5``: what was there,
    committed to DVC or not) from the recorded repository's DVC cache to ``dest``; the number
    of files written. Raises MissingObjectError naming what the cache lacks (``dvc pull``
    fetches it). The caller verifies the ledger digest: DVC's md5 is not ledger's BLAKE3."""
    from dvc_data.hashfile import load
    from dvc_data.hashfile.hash_info import HashInfo
    from dvc_data.hashfile.tree import Tree

    oid = info.workspace_md5
    repo, odb = _open_cache(info)
    with repo:
        if kind == "file":
            _copy(odb.oid_to_path(oid), dest.parent, dest.name, "the file", oid)
            return 1
        try:
            tree = load(odb, HashInfo(info.hash_name, oid))
        except (FileNotFoundError, OSError, ValueError) as e:
            raise MissingObjectError(
                oid, f"the directory listing (DVC md5 {oid}) is not in the DVC cache ({e})"
            ) from None
        if not isinstance(tree, Tree):
            raise MissingObjectError(oid, f"DVC md5 {oid} is not a directory listing")
        dest.mkdir(parents=True, exist_ok=True)
        n = 0
        for key, _meta, hash_info in tree:
            try:
                rel = safe_relpath("/".join(key))
            except ValueError as e:
                raise ReplayError(f"DVC's listing {oid} holds an unsafe path: {e}") from None
            _copy(odb.oid_to_path(hash_info.value), dest, rel, f"file {rel}", hash_info.value)
            n += 1
        return n


def fetch_from_dvc_remote(info: DvcInfo) -> str:
    """Fetch the data ``info.source`` tracks into the recorded repository's DVC cache from its
    DVC remote, through DVC's Python API (``Repo.fetch``); returns the remote's name and URL.
    Raises MissingObjectError when there is no remote or it lacks the data. The caller then
    restores from the cache and verifies the ledger digest."""
    repo, _ = _open_cache(info)
    with repo:
        name = repo.config.get("core", {}).get("remote")
        remotes = repo.config.get("remote", {})
        if not name or name not in remotes:
            raise MissingObjectError(
                info.workspace_md5,
                f"the DVC repository {info.repo_root} has no default DVC remote to fetch from",
            )
        where = f"DVC remote {name} ({remotes[name].get('url')})"
        try:
            repo.fetch(targets=[os.fspath(Path(info.repo_root) / info.source)])
        except Exception as e:  # DVC's own error tree: a missing or unreachable remote
            raise MissingObjectError(
                info.workspace_md5, f"fetching it from {where} failed: {e}"
            ) from None
    return where
