"""Rebuild a run's exact code and inputs in an isolated directory, never touching the user's."""

from __future__ import annotations

import functools
import os
import posixpath
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from pydantic import ValidationError

from ..capture import confine
from ..capture.trees import copy_verified
from ..errors import (
    LedgerError,
    MalformedRecordError,
    MissingObjectError,
    ReplayError,
    UsageError,
)
from ..records.base import Record, record_from_json
from ..records.code import CodeSnapshot
from ..records.contract import Contract
from ..records.data import DataManifest, InputDigest
from ..records.run import Run
from ..store import Store

__all__ = ["Workspace", "build_workspace", "code_location", "restore_resume_sources"]

R = TypeVar("R", bound=Record)


@dataclass
class Workspace:
    root: Path
    run_dir: Path  # where the command runs (the recorded cwd inside the code)
    notes: list[str] = field(default_factory=list)


def _load(store: Store, oid: str, cls: type[R], what: str) -> R:
    """A stored record, or a ReplayError that says which one is malformed and where."""
    try:
        value = record_from_json(store.get_json(oid), cls)
    except MalformedRecordError as e:
        raise ReplayError(
            f"the {what} record {oid} is malformed: {e.where}: {e.reason}",
            hint="the record was damaged or crafted; nothing was written outside the workspace",
        ) from None
    except UsageError as e:
        raise ReplayError(f"the {what} record {oid} cannot be read: {e.message}") from None
    return value


def _input_digest(raw: dict[str, Any]) -> InputDigest:
    try:
        return InputDigest.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReplayError(
            f"an input of the contract is malformed: {where}: {first['msg']}",
            hint="the record was damaged or crafted; nothing was written outside the workspace",
        ) from None


def _manifest(store: Store, digest: InputDigest) -> DataManifest | None:
    """A directory input's data-manifest, if the store has it."""
    if digest.files is None or not store.objects.has(digest.files):
        return None
    return _load(store, digest.files, DataManifest, f"data-manifest of input {digest.path}")


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


def _link_inside(entry_path: str, link: str) -> bool:
    """A manifest symlink's target, read from the directory holding it, stays in the input."""
    if link.startswith("/"):
        return False
    norm = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), link))
    return norm != ".." and not norm.startswith("../")


def _restore_input(store: Store, digest: InputDigest, root: Path, rel: str) -> None:
    """Write an input back from the store at ``root/rel``, through the confined primitive
    (nothing on the way followed), checking every file's id as it is written."""
    if digest.kind == "file":
        fill = functools.partial(copy_verified, store, digest.digest)
        mode = digest.mode & 0o777 if digest.mode is not None else 0o644
        confine.write_file(root, rel, fill, mode=mode, replace=True)
        return
    manifest = _manifest(store, digest)
    if manifest is None:
        raise ReplayError(f"input {digest.path} has no file manifest; it cannot be restored")
    confine.make_dirs(root, rel)
    for entry in manifest.entries:
        target = f"{rel}/{entry.path}"
        if entry.type == "dir":
            confine.make_dirs(root, target)
            continue
        if entry.digest is None or not store.objects.has(entry.digest):
            raise MissingObjectError(
                entry.digest or "", f"file {entry.path} of input {digest.path} is not in the store"
            )
        if entry.type == "symlink":
            link = store.objects.get_bytes(entry.digest).decode()
            if not _link_inside(entry.path, link):
                raise ReplayError(f"input {digest.path}: symlink {entry.path} points outside it")
            confine.make_symlink(root, target, link, replace=True)
            continue
        fill = functools.partial(copy_verified, store, entry.digest)
        confine.write_file(root, target, fill, mode=entry.mode & 0o777, replace=True)


def _restore_via_dvc(store: Store, digest: InputDigest, root: Path, rel: str) -> str:
    """Write a DVC-tracked input back from the DVC cache of the repository it was recorded in;
    a note saying so. Empty directories and permission bits, which DVC does not keep, come
    from the data-manifest when the store has it."""
    from ..capture.dvcinfo import restore_from_dvc

    if digest.dvc is None:
        raise ReplayError(f"input {rel} was not recorded as tracked by DVC")
    parent = posixpath.dirname(rel)
    confine.make_dirs(root, parent)
    if digest.kind == "dir":
        confine.make_dirs(root, rel)
    dest = root / rel
    source = f"the DVC cache of {digest.dvc.repo_root}"
    try:
        n = restore_from_dvc(digest.dvc, digest.kind, dest)
    except MissingObjectError as missing:
        # Neither the store nor DVC's cache: fetch it from the repository's DVC remote.
        from ..capture.dvcinfo import fetch_from_dvc_remote

        try:
            where = fetch_from_dvc_remote(digest.dvc)
        except MissingObjectError as e:
            raise MissingObjectError(missing.oid, f"{missing.message}; {e.message}") from None
        try:
            n = restore_from_dvc(digest.dvc, digest.kind, dest)
        except MissingObjectError as e:
            raise MissingObjectError(
                e.oid, f"{e.message}, and fetching it from {where} did not bring it"
            ) from None
        source = f"{where}, through the DVC cache of {digest.dvc.repo_root}"
    if digest.kind == "file":
        if digest.mode is not None:
            os.chmod(dest, digest.mode & 0o777)
    else:
        manifest = _manifest(store, digest)
        for entry in manifest.entries if manifest is not None else []:
            target = dest / entry.path
            if entry.type == "dir":
                confine.make_dirs(root, f"{rel}/{entry.path}")
            elif entry.type == "file" and not target.is_symlink() and target.is_file():
                os.chmod(target, entry.mode & 0o777)
    return (
        f"input {digest.path} restored from {source} "
        f"(DVC md5 {digest.dvc.workspace_md5}, {n} files), BLAKE3 digest verified"
    )


def _climb(cwd_relpath: str, given: str) -> int:
    """How many levels above the recorded repository root a relative input reaches."""
    norm = posixpath.normpath(posixpath.join(cwd_relpath, given))
    n = 0
    for part in norm.split("/"):
        if part != "..":
            break
        n += 1
    return n


def code_location(code: CodeSnapshot, inputs: list[InputDigest]) -> str:
    """Where the code goes in the workspace (relative to its root).

    ``code`` when every relative input lies inside the repository. An input recorded as
    ``../beside/d.txt`` needs the repository's parent too: the code then goes to
    ``fs/<parent>/<repo>``, the last directory names of the recorded repository path, deep
    enough that every such input lands inside the workspace, at the same relative path.
    """
    names = PurePosixPath(code.root).parts[1:]
    climbs = [
        _climb(code.cwd_relpath, d.path) for d in inputs if not PurePosixPath(d.path).is_absolute()
    ]
    up = max((c for c in climbs if c <= len(names)), default=0)
    if up == 0:
        return "code"
    rel = "/".join(["fs", *names[len(names) - up :]])
    try:
        confine.parts(rel)
    except confine.OutsideError:
        raise ReplayError(
            f"the code snapshot's repository path {code.root!r} is not a plain absolute path",
            hint="the record was damaged or crafted; nothing was written outside the workspace",
        ) from None
    return rel


def _in_place(given: str, abspath: Path, digest: InputDigest, cache: Any, why: str) -> str:
    """Check an input where it lies, never writing it; a note, or ReplayError if it changed."""
    from ..capture.data import digest_input

    try:
        now: str | None = digest_input(abspath, cache, dvc=False).digest
    except LedgerError:  # gone or unreadable
        now = None
    if now == digest.digest:
        return f"input {given} used in place at {abspath} ({why}; digest verified, not written)"
    raise ReplayError(
        f"input {given} ({why}) no longer holds the recorded data at {abspath}",
        hint=f"restore it there (digest {digest.digest}); replay checks such inputs in place "
        "and never writes them",
    )


def build_workspace(
    store: Store,
    contract: Contract,
    *,
    parent: Path | None = None,
    keep: bool = False,
) -> Workspace:
    """A new workspace holding the run's code and inputs. On any failure (Ctrl-C included) the
    workspace is removed again, unless ``keep``."""
    try:
        root = Path(tempfile.mkdtemp(prefix="ledger-replay-", dir=parent))
    except OSError as e:
        raise ReplayError(
            f"cannot create a replay workspace in {parent or tempfile.gettempdir()}: {e.strerror}",
            hint="free some space or choose another place with --workspace-dir",
        ) from None
    try:
        return _fill(store, contract, root)
    except BaseException as e:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
        elif isinstance(e, LedgerError):
            e.hint = f"{e.hint + '; ' if e.hint else ''}the workspace is kept at {root}"
        raise


def _fill(store: Store, contract: Contract, root: Path) -> Workspace:
    from ..capture.code import materialize_code
    from ..capture.data import digest_input
    from ..capture.statcache import StatCache
    from ..capture.trees import describe

    code = _load(store, contract.code, CodeSnapshot, "code snapshot")
    inputs = [_input_digest(raw) for raw in contract.inputs]
    code_rel = code_location(code, inputs)
    confine.make_dirs(root, posixpath.dirname(code_rel))
    run_dir = materialize_code(code, store, root / code_rel, refuse_redacted=True)
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
    for digest in inputs:
        given = digest.path
        abspath = Path(os.path.normpath(digest.abspath))
        if PurePosixPath(given).is_absolute():
            # Arguments name this absolute path: it is read there, so it is checked there.
            ws.notes.append(_in_place(given, Path(given), digest, cache, "an absolute path"))
            continue
        rel = posixpath.normpath(posixpath.join(code_rel, code.cwd_relpath, given))
        if rel == ".." or rel.startswith("../"):
            ws.notes.append(_in_place(given, abspath, digest, cache, "above the filesystem root"))
            continue
        blocked = confine.blocked_by(root, rel)
        if blocked is not None:
            # The rebuilt code has a symlink (or a file) on the input's path: replay never
            # writes through one. If it leads to the recorded data, that data is used.
            seen = os.path.realpath(run_dir / given)
            if seen == os.path.realpath(abspath):
                why = f"reached through {blocked} in the code"
                ws.notes.append(_in_place(given, abspath, digest, cache, why))
                continue
            raise ReplayError(
                f"input {given} lies below {blocked}, which is a symlink or a file in the "
                "rebuilt code; replay never writes through one",
                hint="record the input by a path that does not cross a symlink",
            )
        target = root / rel
        missing = _missing(store, digest)
        try:
            if missing is None:
                _restore_input(store, digest, root, rel)
            elif digest.dvc is not None:
                try:
                    note = _restore_via_dvc(store, digest, root, rel)
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
                    hint="it was recorded with --no-store-inputs or its objects were collected "
                    "by gc; record the run again with its inputs stored, or track the data with "
                    "DVC so that replay can take it from DVC's cache",
                )
        except confine.OutsideError as e:
            raise ReplayError(f"cannot restore input {given}: {e.message}", hint=e.hint) from None
        if code_rel != "code" and _climb(code.cwd_relpath, given) > 0:
            ws.notes.append(f"input {given} lies outside the repository: restored at {target}")
        after = digest_input(target, cache, dvc=False)
        if after.digest != digest.digest:
            raise ReplayError(
                f"restored input {given} has digest {after.digest}, expected {digest.digest}",
                hint="the data the run read is not what the store or DVC's cache holds now",
            )
    return ws


def restore_resume_sources(store: Store, run: Run, ws: Workspace) -> None:
    """Rebuild the files the original named to resume from (a Lightning checkpoint pointer in
    an ignored ``ckpt/``), which the code snapshot does not hold: their bytes were stored with
    the load event (``source_digest``). A file the workspace already has (tracked, or an
    ``--input``) is left as it is; one that cannot be rebuilt (outside the workspace, or its
    bytes gone) is a ReplayError naming it and ``--input``, before the command runs."""
    done: set[str] = set()
    for event in run.checkpoints:
        given = event.source
        if event.event != "load" or given is None or event.source_digest is None:
            continue
        if given in done:
            continue
        done.add(given)
        fix = (
            f"record the run with `--input {given}` so that replay restores it, or resume "
            "from `ledger:<checkpoint id>`"
        )
        if PurePosixPath(given).is_absolute():
            if Path(given).is_file():
                continue  # read where it lies, as the original did
            raise ReplayError(
                f"the original run resumed from {given}, which no longer exists; a replay "
                "never writes outside its workspace",
                hint=fix,
            )
        rel = os.path.relpath(os.path.normpath(ws.run_dir / given), ws.root)
        if (ws.root / rel).exists():
            continue
        if not store.objects.has(event.source_digest):
            raise ReplayError(
                f"the original run resumed from {given}, which the replay workspace lacks, "
                "and its stored copy is gone",
                hint=fix,
            )
        try:
            fill = functools.partial(copy_verified, store, event.source_digest)
            confine.write_file(ws.root, rel.replace(os.sep, "/"), fill)
        except confine.OutsideError:
            raise ReplayError(
                f"the original run resumed from {given}, outside the replay workspace",
                hint=fix,
            ) from None
        ws.notes.append(
            f"{given}, the file the original run resumed from, rebuilt from the ledger "
            f"({event.source_digest[:15]}…; not in the code snapshot)"
        )
