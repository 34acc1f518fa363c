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
from ..records.tree import safe_relpath
from ..store import Store

__all__ = ["Workspace", "build_workspace"]


@dataclass
class Workspace:
    root: Path
    run_dir: Path  # where the command runs (the recorded cwd inside the code)
    notes: list[str] = field(default_factory=list)


def _manifest(store: Store, digest: InputDigest) -> DataManifest | None:
    """A directory input's data-manifest, if the store has it."""
    if digest.files is None or not store.objects.has(digest.files):
        return None
    manifest = record_from_json(store.get_json(digest.files), DataManifest)
    assert isinstance(manifest, DataManifest)
    return manifest


def _missing(store: Store, digest: InputDigest) -> str | None:
    """What the store lacks to restore this input (a description), or None if it has it all."""
    if digest.kind == "file":
        return None if store.objects.has(digest.digest) else "its content is not in the store"
    manifest = _manifest(store, digest)
    if manifest is None:
        return "its file manifest is not in the store"
    for entry in manifest.entries:
        if entry.digest is not None and not store.objects.has(entry.digest):
            return f"file {entry.path} is not in the store"
    return None


def _restore_input(store: Store, digest: InputDigest, dest: Path) -> None:
    """Write an input back from the store, checking every file's id as it is written."""
    if digest.kind == "file":
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as f:
            store.objects.copy_to(digest.digest, f)
        return
    manifest = _manifest(store, digest)
    if manifest is None:
        raise ReplayError(f"input {digest.path} has no file manifest; it cannot be restored")
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


def _restore_via_dvc(store: Store, digest: InputDigest, dest: Path) -> str:
    """Write a DVC-tracked input back from the DVC cache of the repository it was recorded in;
    a note saying so. Empty directories and permission bits, which DVC does not keep, come
    from the data-manifest when the store has it."""
    from ..capture.dvcinfo import restore_from_dvc

    assert digest.dvc is not None
    n = restore_from_dvc(digest.dvc, digest.kind, dest)
    if digest.kind == "file":
        if digest.mode is not None:
            os.chmod(dest, digest.mode & 0o777)
    else:
        manifest = _manifest(store, digest)
        for entry in manifest.entries if manifest is not None else []:
            target = dest / safe_relpath(entry.path)
            if entry.type == "dir":
                target.mkdir(parents=True, exist_ok=True)
            elif entry.type == "file" and target.is_file():
                os.chmod(target, entry.mode & 0o777)
    return (
        f"input {digest.path} restored from the DVC cache of {digest.dvc.repo_root} "
        f"(DVC md5 {digest.dvc.workspace_md5}, {n} files), BLAKE3 digest verified"
    )


def build_workspace(store: Store, contract: Contract, *, parent: Path | None = None) -> Workspace:
    from ..capture.code import materialize_code
    from ..capture.data import digest_input
    from ..capture.statcache import StatCache
    from ..capture.trees import describe
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
    if code.redacted:
        ws.notes.append(
            describe(
                "warning: these replayed lines differ from the recorded code, where a secret "
                "was redacted",
                code.redacted,
            )
        )
    cache = StatCache()
    for raw in contract.inputs:
        digest = InputDigest.model_validate(raw)
        given = Path(digest.path)
        if given.is_absolute():
            # Arguments name this absolute path: use it in place if it still holds the data.
            if given.exists() and digest_input(given, cache, dvc=False).digest == digest.digest:
                ws.notes.append(f"input {given} used in place (absolute path, digest verified)")
                continue
            raise ReplayError(
                f"input {given} is an absolute path and no longer holds the recorded data",
                hint=f"restore it there (digest {digest.digest}), or record runs with relative "
                "input paths so replay can restore them into its workspace",
            )
        target = run_dir / given
        missing = _missing(store, digest)
        if missing is None:
            _restore_input(store, digest, target)
        elif digest.dvc is not None:
            try:
                note = _restore_via_dvc(store, digest, target)
            except MissingObjectError as e:
                raise ReplayError(
                    f"cannot restore input {given}: {missing}, and {e.message}",
                    hint=f"fetch it into DVC's cache: `dvc pull {digest.dvc.source}` in "
                    f"{digest.dvc.repo_root}, then replay again",
                ) from None
            ws.notes.append(note)
        else:
            raise ReplayError(
                f"cannot restore input {given}: {missing}",
                hint="it was recorded with --no-store-inputs or its objects were collected by "
                "gc; record the run again with its inputs stored, or track the data with DVC "
                "so that replay can take it from DVC's cache",
            )
        after = digest_input(target, cache, dvc=False)
        if after.digest != digest.digest:
            raise ReplayError(
                f"restored input {given} has digest {after.digest}, expected {digest.digest}",
                hint="the data the run read is not what the store or DVC's cache holds now",
            )
    return ws
