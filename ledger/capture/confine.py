"""Writes that cannot leave a directory: the one primitive every materialisation writes through.

Each path is relative to a root and is opened one component at a time, relative to the
directory opened before it (``dir_fd``), with ``O_NOFOLLOW``: a symlink anywhere on the way (one
in the code, one a patch created, one planted by another process) stops the write instead of
being followed. Absolute paths, ``..``, ``.`` and empty components are refused before anything
is opened. The root itself may sit below symlinks (``/tmp`` often is one); only what lies
below it is confined.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import UsageError

__all__ = ["OutsideError", "blocked_by", "make_dirs", "make_symlink", "parts", "write_file"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutsideError(UsageError):
    """A write would leave its root, or go through a symlink or a file on the way."""


def parts(rel: str) -> list[str]:
    """The components of ``rel``; OutsideError for anything that is not a plain relative path."""
    split = rel.split("/")
    if not rel or rel.startswith("/") or "\x00" in rel or any(p in ("", ".", "..") for p in split):
        raise OutsideError(
            f"refusing to write {rel!r}: paths must be relative, without '..', '.' or empty parts",
            hint="the record was damaged or crafted; nothing was written there",
        )
    return split


@contextlib.contextmanager
def _dir(root: Path, names: list[str], *, create: bool) -> Iterator[int]:
    """An fd of ``root/names...``, every component opened without following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(names):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                nxt = _open_sub(fd, root, names[: i + 1])
            except OSError as e:
                raise _blocked(root, names[: i + 1], e) from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_sub(fd: int, root: Path, names: list[str]) -> int:
    try:
        return os.open(names[-1], _DIR_FLAGS, dir_fd=fd)
    except OSError as e:
        raise _blocked(root, names, e) from None


def _blocked(root: Path, names: list[str], e: OSError) -> OutsideError:
    where = "/".join(names)
    if e.errno in (errno.ELOOP, errno.ENOTDIR):
        why = "it is a symlink or a file, and writes never go through one"
    else:
        why = e.strerror or str(e)
    return OutsideError(
        f"refusing to write below {where} in {root}: {why}",
        hint="nothing was written there; the recorded paths cross a symlink or a file",
    )


def blocked_by(root: Path, rel: str) -> str | None:
    """The first existing component above ``rel`` (relative to ``root``) that is a symlink or
    not a directory, or None when a write to ``rel`` would stay inside ``root``."""
    names = parts(rel)
    here = root
    for i, name in enumerate(names[:-1]):
        here = here / name
        if here.is_symlink() or (os.path.lexists(here) and not here.is_dir()):
            return "/".join(names[: i + 1])
        if not os.path.lexists(here):
            return None
    return None


def make_dirs(root: Path, rel: str) -> None:
    """Create ``root/rel`` and its parents (existing ones are kept), never through a symlink."""
    if rel in ("", "."):
        return
    with _dir(root, parts(rel), create=True):
        pass


def _unlink_leaf(fd: int, name: str, root: Path, rel: str) -> None:
    """Remove a file or symlink named ``name`` in ``fd`` (a directory stays: an error)."""
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise OutsideError(
            f"cannot write {rel} in {root}: a directory is there",
            hint="the recorded files and the rebuilt code disagree; nothing was overwritten",
        ) from None


def write_file(
    root: Path,
    rel: str,
    fill: Callable[[BinaryIO], object],
    *,
    mode: int = 0o644,
    replace: bool = False,
) -> None:
    """Create the file ``root/rel`` (parents as needed) and let ``fill`` write its content.

    ``replace``: a file or symlink already there is removed first (never written through).
    A failed ``fill`` leaves no file behind.
    """
    names = parts(rel)
    with _dir(root, names[:-1], create=True) as fd:
        leaf = names[-1]
        if replace:
            _unlink_leaf(fd, leaf, root, rel)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            out = os.open(leaf, flags, 0o600, dir_fd=fd)
        except FileExistsError:
            raise OutsideError(
                f"cannot write {rel} in {root}: it already exists",
                hint="the recorded files overlap; nothing was overwritten",
            ) from None
        try:
            with os.fdopen(out, "wb") as f:
                fill(f)
                os.fchmod(f.fileno(), mode & 0o7777)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(leaf, dir_fd=fd)
            raise


def make_symlink(root: Path, rel: str, target: str, *, replace: bool = False) -> None:
    """Create the symlink ``root/rel`` -> ``target`` (parents as needed). The caller decides
    whether ``target`` may point where it points: creating a link writes nothing through it."""
    names = parts(rel)
    with _dir(root, names[:-1], create=True) as fd:
        if replace:
            _unlink_leaf(fd, names[-1], root, rel)
        os.symlink(target, names[-1], dir_fd=fd)
