"""Rebuild a run's exact code and inputs in an isolated directory, never touching the user's."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MissingObjectError, ReplayError
from ..records.base import record_from_json
from ..records.contract import Contract
from ..records.data import DataManifest, InputDigest
from ..store import Store

__all__ = ["Workspace", "build_workspace"]


@dataclass
class Workspace:
    root: Path
    run_dir: Path  # where the command runs (the recorded cwd inside the code)
    notes: list[str] = field(default_factory=list)


def _restore_input(store: Store, digest: InputDigest, dest: Path) -> None:
    """Write an input back from the store, checking every file's id as it is written."""
    if digest.kind == "file":
        if not store.objects.has(digest.digest):
            raise MissingObjectError(digest.digest, f"input {digest.path} is not in the store")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as f:
            store.objects.copy_to(digest.digest, f)
        return
    if digest.files is None:
        raise ReplayError(f"input {digest.path} has no file manifest; it cannot be restored")
    manifest = record_from_json(store.get_json(digest.files), DataManifest)
    assert isinstance(manifest, DataManifest)
    from ..records.tree import safe_relpath

    dest.mkdir(parents=True, exist_ok=True)
    for entry in manifest.entries:
        rel = safe_relpath(entry.path)
        target = dest / rel
        if entry.type == "dir":
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.digest is None or not store.objects.has(entry.digest):
            raise MissingObjectError(
                entry.digest or "", f"file {rel} of input {digest.path} is not in the store"
            )
        if entry.type == "symlink":
            link = store.objects.get_bytes(entry.digest).decode()
            resolved = (target.parent / link).resolve()
            if not resolved.is_relative_to(dest.resolve()):
                raise ReplayError(f"input {digest.path}: symlink {rel} points outside it")
            os.symlink(link, target)
            continue
        with open(target, "wb") as f:
            store.objects.copy_to(entry.digest, f)
        os.chmod(target, entry.mode & 0o777)


def build_workspace(store: Store, contract: Contract, *, parent: Path | None = None) -> Workspace:
    from ..capture.code import materialize_code
    from ..capture.data import digest_input
    from ..capture.statcache import StatCache
    from ..records.code import CodeSnapshot

    try:
        root = Path(tempfile.mkdtemp(prefix="ledger-replay-", dir=parent))
    except OSError as e:
        raise ReplayError(
            f"cannot create a replay workspace in {parent or tempfile.gettempdir()}: {e.strerror}",
            hint="free some space or choose another place with --workspace-dir",
        ) from None
    code = record_from_json(store.get_json(contract.code), CodeSnapshot)
    assert isinstance(code, CodeSnapshot)
    run_dir = materialize_code(code, store, root / "code")
    ws = Workspace(root=root, run_dir=run_dir)
    original_cwd = Path(contract.cwd)
    cache = StatCache()
    for raw in contract.inputs:
        digest = InputDigest.model_validate(raw)
        given = Path(digest.path)
        if given.is_absolute():
            # Arguments name this absolute path: use it in place if it still holds the data.
            if given.exists() and digest_input(given, cache).digest == digest.digest:
                ws.notes.append(f"input {given} used in place (absolute path, digest verified)")
                continue
            raise ReplayError(
                f"input {given} is an absolute path and no longer holds the recorded data",
                hint=f"restore it there (digest {digest.digest}), or record runs with relative "
                "input paths so replay can restore them into its workspace",
            )
        target = run_dir / given
        try:
            _restore_input(store, digest, target)
        except MissingObjectError as e:
            raise ReplayError(
                f"cannot restore input {given}: {e.message}",
                hint="it was recorded with --no-store-inputs or collected by gc; put the data at "
                f"{original_cwd / given} and pass --inputs-from-original, or `dvc pull` if "
                "DVC tracks it",
            ) from None
        after = digest_input(target, cache)
        if after.digest != digest.digest:
            raise ReplayError(
                f"restored input {given} has digest {after.digest}, expected {digest.digest}"
            )
    return ws
