"""A path remote's files, reached without ever following a link the remote holds.

A remote folder is shared: anyone who can write to it can plant a symlink (``tmp/`` pointing
at a home folder, ``objects/b3/ab`` pointing anywhere). Through fsspec's local filesystem a
push then swept old files out of the link's target, or wrote objects there. Here every path
below the remote's root is opened one component at a time, relative to the folder opened
before it (``dir_fd``), with ``O_NOFOLLOW``, as ``ledger.capture.confine`` does for replay's
writes; files are read through ``ledger.store.safe_read`` (regular files only). The root
itself may sit below symlinks; only what lies below it is confined.

It offers the few fsspec calls ``Remote`` makes (``exists``, ``makedirs``, ``pipe_file``,
``cat_file``, ``open``, ``ls``, ``find``, ``info``, ``mv``, ``rm_file``, ``rm``), with their
meaning for files; a link or special file met on the way raises ``RemoteLinkError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from typing import Any, BinaryIO

from ..errors import LedgerAccessError
from ..store.safe_read import open_regular, read_regular

__all__ = ["PathFS", "RemoteLinkError"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# ``cat_file`` reads at most this much (the remote's own small files).
MAX_CAT = 256 << 20


class RemoteLinkError(LedgerAccessError):
    """A path below a remote's root goes through a symlink or a file where a folder belongs."""


class PathFS:
    """The fsspec calls a ``Remote`` makes, on a local folder, never through a symlink."""

    protocol = ("file", "local")

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") or "/"

    # -- walking -----------------------------------------------------------------------------
    def _names(self, path: str) -> list[str]:
        path = str(path).rstrip("/")
        if path == self.root:
            return []
        prefix = self.root if self.root.endswith("/") else self.root + "/"
        if not path.startswith(prefix):
            raise ValueError(f"{path} is not below the remote's root {self.root}")
        names = path[len(prefix) :].split("/")
        if any(n in ("", ".", "..") for n in names):
            raise ValueError(f"{path}: remote paths have no '.', '..' or empty parts")
        return names

    def _refuse(self, names: list[str], what: str) -> RemoteLinkError:
        where = "/".join(names)
        return RemoteLinkError(
            f"remote {self.root}: {where} is {what}; a remote operation never follows a link "
            "it did not make, so nothing was read or written through it",
            hint=f"remove {os.path.join(self.root, where)} (someone planted it), then retry",
        )

    @contextlib.contextmanager
    def _dir(self, names: list[str], *, create: bool = False) -> Iterator[int]:
        """An fd of ``root/names...``, each component opened without following a link."""
        if create:
            os.makedirs(self.root, exist_ok=True)  # the root is the user's to name: not confined
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for i, name in enumerate(names):
                try:
                    nxt = os.open(name, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    try:
                        nxt = os.open(name, _DIR, dir_fd=fd)
                    except OSError as e:
                        raise self._blocked(fd, names[: i + 1], e) from None
                except OSError as e:
                    raise self._blocked(fd, names[: i + 1], e) from None
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def _blocked(self, fd: int, names: list[str], e: OSError) -> OSError | RemoteLinkError:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            return e
        # O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: look at what is there.
        try:
            link = stat.S_ISLNK(os.stat(names[-1], dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            link = e.errno == errno.ELOOP
        return self._refuse(names, "a symbolic link" if link else "not a folder")

    @contextlib.contextmanager
    def _parent(self, path: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        names = self._names(path)
        if not names:
            raise IsADirectoryError(errno.EISDIR, "the remote's root is a folder", path)
        with self._dir(names[:-1], create=create) as fd:
            yield fd, names[-1]

    # -- the fsspec calls --------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        try:
            with self._parent(path) as (fd, name):
                os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def info(self, path: str) -> dict[str, Any]:
        with self._parent(path) as (fd, name):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        return self._entry(str(path), st)

    @staticmethod
    def _entry(path: str, st: os.stat_result) -> dict[str, Any]:
        if stat.S_ISREG(st.st_mode):
            kind = "file"
        elif stat.S_ISDIR(st.st_mode):
            kind = "directory"
        else:
            kind = "other"  # a link, a FIFO...: never a file to remove or read
        return {"name": path, "size": st.st_size, "type": kind, "mtime": st.st_mtime}

    def makedirs(self, path: str, exist_ok: bool = True) -> None:
        with self._dir(self._names(path), create=True):
            pass

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        with self._parent(path, create="w" in mode) as (fd, name):
            if mode == "rb":
                return open_regular(name, dir_fd=fd, shown=path)
            if mode != "wb":
                raise ValueError(f"mode {mode!r} is not one a remote uses")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                out = os.open(name, flags, 0o644, dir_fd=fd)
            except FileExistsError:
                raise self._refuse(self._names(path), "already there") from None
            return os.fdopen(out, "wb")

    def cat_file(self, path: str) -> bytes:
        with self._parent(path) as (fd, name):
            return read_regular(name, MAX_CAT, dir_fd=fd, shown=path)

    def pipe_file(self, path: str, value: bytes) -> None:
        """Write ``value`` to ``path``: to a new name first, then renamed over it."""
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with self.open(tmp, "wb") as f:
            f.write(value)
        self.mv(tmp, path)

    def mv(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` (replacing a file, or a link itself, never its target)."""
        with self._parent(src) as (sfd, sname), self._parent(dst, create=True) as (dfd, dname):
            os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)

    def rm_file(self, path: str) -> None:
        with self._parent(path) as (fd, name):
            os.unlink(name, dir_fd=fd)  # a link is removed itself, never its target

    def rm(self, path: str) -> None:
        self.rm_file(path)

    def ls(self, path: str, detail: bool = True) -> list[Any]:
        names = self._names(path)
        out: list[Any] = []
        with self._dir(names) as fd, os.scandir(fd) as entries:
            for e in entries:
                full = f"{str(path).rstrip('/')}/{e.name}"
                out.append(self._entry(full, e.stat(follow_symlinks=False)) if detail else full)
        return out

    def find(self, path: str, detail: bool = False) -> Any:
        """Every non-folder below ``path`` (links included, never followed into)."""
        found: dict[str, dict[str, Any]] = {}
        stack = [str(path).rstrip("/")]
        while stack:
            here = stack.pop()
            for entry in self.ls(here, detail=True):
                if entry["type"] == "directory":
                    stack.append(entry["name"])
                else:
                    found[entry["name"]] = entry
        if detail:
            return dict(sorted(found.items()))
        return sorted(found)
