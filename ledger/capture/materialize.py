"""Rebuild the exact code of a run in a new directory, for ``ledger replay``.

Inside git: a shared clone of the source repository, the recorded commit checked out detached
(or, when no repository here has the commit, the commit carried in the store by ``ledger
export``/``push``: ``gitsource.py``),
the stored patch applied with ``git apply --binary --index``, submodules put at their recorded
commits, then the untracked files written. Outside git: the snapshot tree written. The user's
own working tree is only ever read from.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ReplayError, UsageError
from ..store import Store
from . import confine
from .gitsnap import run_git
from .secrets import find_marker, restore_patch_context
from .trees import check_tree, copy_verified, load_tree, write_tree

if TYPE_CHECKING:
    from ..records.code import CodeSnapshot
    from ..records.tree import Tree

__all__ = ["materialize_code", "refuse_redacted_files"]


def _prepare_dest(dest: Path) -> bool:
    """Refuse a non-empty ``dest``; create it. True if it did not exist before."""
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise UsageError(
            f"cannot build the code in {dest}: it exists and is not a directory",
            hint="choose a new directory",
        )
    if dest.is_dir():
        if any(dest.iterdir()):
            raise UsageError(
                f"cannot build the code in {dest}: the directory is not empty",
                hint="choose a new or empty directory; nothing there was changed",
            )
        return False
    dest.mkdir(parents=True)
    return True


def _clear(dest: Path, created: bool) -> None:
    if created:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _confined(make: Callable[[Path, str], None], root: Path, rel: str) -> None:
    try:
        make(root, rel)
    except confine.OutsideError as e:
        raise ReplayError(e.message, hint=e.hint) from None


def _has_commit(repo: Path, commit: str) -> bool:
    proc = run_git(repo, "cat-file", "-e", f"{commit}^{{commit}}", check=False, error=ReplayError)
    return proc.returncode == 0


def _is_repo(path: Path) -> bool:
    """True if ``path`` itself is a repository (its top, a bare one, or a git dir); a plain
    directory inside some other repository does not count."""
    if not path.is_dir():
        return False
    proc = run_git(path, "rev-parse", "--absolute-git-dir", check=False, error=ReplayError)
    if proc.returncode != 0:
        return False
    here = path.resolve()
    if Path(proc.stdout.decode().strip()).resolve() == here:
        return True
    top = run_git(path, "rev-parse", "--show-toplevel", check=False, error=ReplayError)
    return top.returncode == 0 and Path(top.stdout.decode().strip()).resolve() == here


def _checkout(src: Path, dest: Path, commit: str, what: str, *, checked: bool = False) -> None:
    """A shared, detached clone of ``src`` at ``commit`` in the empty directory ``dest``.
    ``checked``: the caller found ``src`` a repository holding ``commit`` already (each check
    starts git, before every replay)."""
    if not checked:
        _require_commit(src, commit, what)
    clone = ("clone", "--quiet", "--no-checkout", "--shared", str(src), str(dest))
    run_git(dest.parent, *clone, error=ReplayError)
    checkout = ("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit)
    run_git(dest, *checkout, error=ReplayError)


def _require_commit(src: Path, commit: str, what: str) -> None:
    if not _is_repo(src):
        raise ReplayError(
            f"cannot rebuild {what}: {src} is not a git repository",
            hint=f"pass the path of a repository that holds commit {commit} (source_repo)",
        )
    if not _has_commit(src, commit):
        raise ReplayError(
            f"cannot rebuild {what}: commit {commit} is not in {src}",
            hint=f"fetch it there (`git -C {src} fetch origin {commit}`), or pass the path of a "
            "repository that has it (source_repo)",
        )


def _apply_patch(store: Store, oid: str, dest: Path, commit: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="ledger-patch-") as tmp:
        patch = Path(tmp) / "code.patch"
        with open(patch, "wb") as f:
            copy_verified(store, oid, f)
        # Lines of the commit that were redacted in the stored patch: take them from the commit.
        patch.write_bytes(restore_patch_context(patch.read_bytes(), dest))
        proc = run_git(
            dest, "apply", "--binary", "--index", "--whitespace=nowarn", str(patch), check=False
        )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise ReplayError(
            f"the stored patch {oid} does not apply onto {commit or 'an empty repository'}: {err}",
            hint="the source repository may hold a different history under this commit id",
        )


def _submodules(snapshot: CodeSnapshot, src: Path, dest: Path) -> None:
    for sub in snapshot.submodules:
        if sub.commit is None:
            continue
        target = dest / sub.path
        blocked = confine.blocked_by(dest, sub.path + "/x")
        if blocked is not None:
            raise ReplayError(
                f"cannot rebuild submodule {sub.path}: {blocked} is a symlink or a file in the "
                "rebuilt code; nothing is ever written through one"
            )
        if target.exists() and any(target.iterdir()):
            raise ReplayError(f"cannot rebuild submodule {sub.path}: {target} is not empty")
        _confined(confine.make_dirs, dest, sub.path)
        # Its checkout, else what `git submodule deinit` leaves behind in .git/modules.
        candidates = [src / sub.path, src / ".git" / "modules" / sub.path]
        found = next((c for c in candidates if _is_repo(c) and _has_commit(c, sub.commit)), None)
        if found is None:
            raise ReplayError(
                f"cannot rebuild submodule {sub.path}: commit {sub.commit} is in neither "
                f"{candidates[0]} nor {candidates[1]}",
                hint=f"run `git submodule update --init {sub.path}` in {src}, or pass the "
                "path of a repository with the submodule checked out (source_repo)",
            )
        _checkout(found, target, sub.commit, f"submodule {sub.path}", checked=True)


def refuse_redacted_files(snapshot: CodeSnapshot, trees: list[Tree], store: Store) -> None:
    """Raise ReplayError when a file written from the stored trees (the untracked files, or
    the snapshot outside git) had a line redacted at record time: its stored copy holds a
    marker where the recorded file held a secret, which the ledger never stored, so the file
    cannot be rebuilt and a replay would run a different one. Each file:line is named with its
    marker. (A redacted line of the patch is taken from the commit when the commit has it.)"""
    lines_of: dict[str, list[int]] = {}
    for entry in snapshot.redacted:
        path, _, number = entry.rpartition(":")
        if number.isdigit():
            lines_of.setdefault(path, []).append(int(number))
    found: list[str] = []
    for tree in trees:
        for e in tree.entries:
            if e.type != "file" or e.path not in lines_of:
                continue
            stored = store.objects.get_bytes(e.oid).splitlines()
            for n in lines_of[e.path]:
                marker = find_marker(stored[n - 1]) if 0 < n <= len(stored) else None
                found.append(f"{e.path}:{n} ({marker or 'a redacted line'})")
    if found:
        more = f" and {len(found) - 10} more" if len(found) > 10 else ""
        raise ReplayError(
            f"the recorded code's untracked files held secrets, stored redacted: "
            f"{', '.join(found[:10])}{more}; the ledger never stores a secret, so these files "
            "cannot be rebuilt as they were, and replay does not run different ones",
            hint="keep secrets out of files in the working tree (read them from environment "
            "variables) or commit the file, and record again; `ledger show` lists the lines",
        )


def materialize_code(
    snapshot: CodeSnapshot,
    store: Store,
    dest: Path,
    *,
    source_repo: Path | None = None,
    refuse_redacted: bool = False,
) -> Path:
    """Build the recorded code in ``dest`` (new or empty) and return the directory to run in.

    ``source_repo`` is where the commit is looked up (default: the recorded repository root).
    ``refuse_redacted`` (replay): refuse, before anything is written, code whose untracked
    files had secrets redacted (``refuse_redacted_files``); a diff of two snapshots shows them
    as stored. Raises ReplayError when a commit is missing or a file cannot be rebuilt,
    UsageError for a bad ``dest`` or a bad tree.
    """
    dest = Path(dest).absolute()
    trees: list[Tree] = [
        load_tree(store, oid) for oid in (snapshot.untracked, snapshot.snapshot) if oid
    ]
    if refuse_redacted:
        refuse_redacted_files(snapshot, trees, store)
    created = _prepare_dest(dest)
    try:
        for tree in trees:
            check_tree(tree, store, dest)  # every path checked before anything is written
        if snapshot.in_repo:
            src = Path(source_repo or snapshot.root).absolute()
            carried = None
            found = (
                snapshot.commit is not None and _is_repo(src) and _has_commit(src, snapshot.commit)
            )
            if snapshot.commit is not None and not found:
                from .gitsource import find_git_source  # the commit travelled with the run

                carried = find_git_source(store, snapshot.commit)
            if carried is not None:
                from .gitsource import rebuild_from_source

                rebuild_from_source(carried, store, dest)
            elif snapshot.commit is not None:
                _checkout(src, dest, snapshot.commit, "the code", checked=found)
            else:
                fmt = f"--object-format={snapshot.object_format}"
                run_git(dest, "init", "--quiet", fmt, error=ReplayError)
            if snapshot.patch is not None:
                _apply_patch(store, snapshot.patch, dest, snapshot.commit)
            _submodules(snapshot, src, dest)
        for tree in trees:
            write_tree(tree, store, dest)
        run_dir = dest / snapshot.cwd_relpath
        _confined(confine.make_dirs, dest, snapshot.cwd_relpath)  # e.g. an ignored build/
    except BaseException:
        _clear(dest, created)
        raise
    return run_dir
