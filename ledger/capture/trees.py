"""File trees in and out of the store: ``build_tree`` stores files, ``write_tree`` writes them back.

Shared by code, data and output capture. Writing checks every entry before the first byte is
written, so a damaged or hostile Tree cannot place anything outside its destination: no absolute
paths, no ``..``, no writing through symlinks, no symlink that resolves outside.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import zstandard

from .._hashing import ALGO_PREFIX, CHUNK, new_hasher
from .._progress import tick
from ..errors import CorruptObjectError, UsageError
from ..records.plain import plain, safe_relpath
from ..store import Store
from . import confine

if TYPE_CHECKING:  # imported where used: `ledger record` of a clean tree runs without pydantic
    from ..records.tree import Tree

__all__ = [
    "build_tree",
    "build_tree_json",
    "check_tree",
    "copy_verified",
    "describe",
    "load_tree",
    "put_tree",
    "write_tree",
]

# As the kernel does: more hops than this is a loop.
MAX_LINK_HOPS = 40


class _Counted:
    """A reader that counts what passes through, so the size stored is the size hashed."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.n = 0

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        self.n += len(data)
        return data


def describe(what: str, items: list[str], limit: int = 10) -> str:
    """One plain sentence naming up to ``limit`` items: 'skipped 12 files: a, b, … and 2 more'."""
    shown = ", ".join(items[:limit])
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return f"{what} ({len(items)}): {shown}{more}"


def _inside(base: str, path: str) -> bool:
    return os.path.commonpath([base, path]) == base


def build_tree(
    base: Path,
    paths: Iterable[str],
    store: Store,
    transform: Callable[[str, bytes], bytes] | None = None,
) -> Tree:
    """Store the files and symlinks at ``paths`` (relative to ``base``) and return their Tree.

    Regular files keep their content and executable bit; symlinks keep their target as content.
    Anything else (sockets, fifos, vanished files, symlinks resolving outside ``base``, names that
    are not UTF-8) is left out and named in ``tree.note``. The Tree itself is not stored: see
    ``put_tree``. ``transform(path, content)``, when given, returns what is stored of a regular
    file (secret redaction of untracked files).
    """
    from ..records.tree import Tree

    return Tree.model_validate(build_tree_json(base, paths, store, transform))


def build_tree_json(
    base: Path,
    paths: Iterable[str],
    store: Store,
    transform: Callable[[str, bytes], bytes] | None = None,
) -> dict[str, Any]:
    """``build_tree``'s record as JSON, without pydantic (ledger/records/plain.py)."""
    real_base = os.path.realpath(base)
    entries: list[dict[str, Any]] = []
    skipped: list[str] = []
    total = 0
    for rel in sorted(set(paths)):
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            # Records hold names as UTF-8: such a file is refused, and said so by its bytes.
            skipped.append(f"{os.fsencode(rel)!r} (its name is not UTF-8)")
            continue
        try:
            safe_relpath(rel)
        except ValueError:
            skipped.append(f"{rel!r} (not a portable relative path)")
            continue
        full = base / rel
        try:
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(full)
                if os.path.isabs(target) or not _inside(real_base, os.path.realpath(full)):
                    skipped.append(f"{rel} (symlink to {target} points outside {base})")
                    continue
                data = os.fsencode(target)
                oid = store.objects.put_bytes(data)
                entries.append(
                    plain("tree_entry", path=rel, type="symlink", size=len(data), oid=oid)
                )
                total += len(data)
            elif stat.S_ISREG(st.st_mode) and transform is not None:
                data = transform(rel, full.read_bytes())
                oid = store.objects.put_bytes(data)
                executable = bool(st.st_mode & stat.S_IXUSR)
                entries.append(
                    plain("tree_entry", path=rel, executable=executable, size=len(data), oid=oid)
                )
                total += len(data)
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    counted = _Counted(f)
                    oid = store.objects.put_stream(cast(BinaryIO, counted))
                executable = bool(st.st_mode & stat.S_IXUSR)
                entries.append(
                    plain("tree_entry", path=rel, executable=executable, size=counted.n, oid=oid)
                )
                total += counted.n
            else:
                skipped.append(f"{rel} (not a regular file or symlink)")
                continue
            tick(1, entries[-1]["size"])
        except FileNotFoundError:
            skipped.append(f"{rel} (vanished while it was read)")
        except PermissionError:
            skipped.append(f"{rel} (permission denied)")
    note = describe("left out", skipped) if skipped else ""
    return plain("tree", entries=entries, total_size=total, note=note)


def put_tree(store: Store, tree: Tree | dict[str, Any]) -> str:
    """Store a Tree record (or its JSON); its id is ``tree.digest()``."""
    return store.put_json(tree if isinstance(tree, dict) else tree.to_json())


def load_tree(store: Store, oid: str) -> Tree:
    """Read and validate a stored Tree; a malformed one (e.g. a ``../`` path) is a UsageError."""
    from ..errors import MalformedRecordError
    from ..records.base import record_from_json
    from ..records.tree import Tree

    value = store.get_json(oid)
    try:
        return record_from_json(value, Tree)
    except MalformedRecordError as e:
        raise UsageError(
            f"tree {oid} is not a valid file tree: {e.where}: {e.reason}",
            hint="the record was damaged or crafted; nothing was written",
        ) from None


def copy_verified(store: Store, oid: str, dest: BinaryIO) -> int:
    """Copy an object's content into ``dest``, checking it hashes to ``oid`` on the way."""
    hasher = new_hasher()
    n = 0
    try:
        with store.objects.open(oid) as f:
            while chunk := f.read(CHUNK):
                hasher.update(chunk)
                dest.write(chunk)
                n += len(chunk)
    except zstandard.ZstdError as e:
        raise CorruptObjectError(
            oid,
            f"object {oid} is corrupt: it does not decompress ({e})",
            hint="run `ledger verify`; restore the object from a remote or another copy",
        ) from None
    if ALGO_PREFIX + hasher.hexdigest() != oid:
        raise CorruptObjectError(
            oid,
            f"object {oid} is corrupt: its content does not hash to its id",
            hint="run `ledger verify`; restore the object from a remote or another copy",
        )
    tick(1, n)
    return n


def _refuse(path: str, why: str) -> UsageError:
    return UsageError(
        f"refusing to write {path!r}: {why}",
        hint="the tree record was damaged or crafted; nothing from it was written",
    )


def _resolves_inside(dest: Path, link: str, target: str, links: dict[str, str]) -> bool:
    """Follow ``target`` from the directory holding ``link`` the way the kernel would, using the
    tree's own symlinks and those already in ``dest``; False if it ever climbs out."""
    if target.startswith("/"):
        return False
    stack = link.split("/")[:-1]
    pending = target.split("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return False
            stack.pop()
            continue
        stack.append(part)
        key = "/".join(stack)
        nxt = links.get(key)
        if nxt is None and (dest / key).is_symlink():
            nxt = os.readlink(dest / key)
        if nxt is not None:
            hops += 1
            if hops > MAX_LINK_HOPS or nxt.startswith("/"):
                return False
            stack.pop()
            pending = nxt.split("/") + pending
    return True


def check_tree(tree: Tree, store: Store, dest: Path) -> dict[str, str]:
    """Every reason not to write ``tree`` into ``dest``, raised as a UsageError naming the path.

    Returns the symlink targets (path -> target) it had to read to decide.
    """
    seen: set[str] = set()
    links: dict[str, str] = {}
    for e in tree.entries:
        try:
            safe_relpath(e.path)
        except ValueError:
            raise _refuse(
                e.path, "paths must be relative and stay inside the destination"
            ) from None
        if e.path in seen:
            raise _refuse(e.path, "the tree lists it twice")
        seen.add(e.path)
        if e.type == "symlink":
            links[e.path] = os.fsdecode(store.objects.get_bytes(e.oid))
    parents = {p for path in seen for p in _parents(path)}
    clash = sorted(seen & parents)
    if clash:
        raise _refuse(clash[0], "it is both a file and a directory in the tree")
    for path, target in sorted(links.items()):
        if not _resolves_inside(dest, path, target, links):
            raise _refuse(path, f"symlink to {target!r} points outside {dest}")
    for path in sorted(seen):
        _check_on_disk(dest, path)
    return links


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _check_on_disk(dest: Path, path: str) -> None:
    for parent in _parents(path):
        p = dest / parent
        if p.is_symlink():
            raise _refuse(
                path, f"{parent} is a symlink in {dest}; files are never written through one"
            )
        if p.exists() and not p.is_dir():
            raise _refuse(path, f"{parent} is a file in {dest}")
    if os.path.lexists(dest / path):
        raise _refuse(path, f"it already exists in {dest}")


def write_tree(tree: Tree, store: Store, dest: Path) -> None:
    """Write every entry of ``tree`` under ``dest``, after checking all of them (``check_tree``).

    Files get mode 0755 or 0644 by their executable bit; contents are verified against their ids.
    """
    links = check_tree(tree, store, dest)
    dest.mkdir(parents=True, exist_ok=True)  # the root the caller chose; below it, confined
    for e in tree.entries:
        # Through the confined primitive: nothing on the way is followed, even a symlink that
        # appeared after the check.
        if e.type == "symlink":
            confine.make_symlink(dest, e.path, links[e.path])
            continue
        fill = functools.partial(copy_verified, store, e.oid)
        confine.write_file(dest, e.path, fill, mode=0o755 if e.executable else 0o644)
