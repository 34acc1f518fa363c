"""Crash-safe file writes: temp file in the same directory tree, fsync, rename, fsync the dir."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write_bytes", "fsync_dir", "replace_bytes", "temp_file"]


def fsync_dir(path: Path) -> None:
    """Make a rename or create inside ``path`` durable (POSIX needs the directory fsynced)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def temp_file(tmp_dir: Path, prefix: str = "w-") -> Iterator[tuple[BinaryIO, Path]]:
    """A temp file that is removed unless the caller renamed it away."""
    fd, name = tempfile.mkstemp(dir=tmp_dir, prefix=prefix)
    path = Path(name)
    f = os.fdopen(fd, "wb")
    try:
        yield f, path
    finally:
        if not f.closed:
            f.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def atomic_write_bytes(path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
    """Replace ``path`` with ``data``: readers see the old or the new content, never a mix."""
    replace_bytes(path, data, tmp_dir)
    fsync_dir(path.parent)


def replace_bytes(
    path: Path, data: bytes, tmp_dir: Path | None = None, *, durable: bool = True
) -> None:
    """``atomic_write_bytes`` but for the fsync of ``path``'s folder, which the caller does
    (once for several files). ``durable=False``: the content is not fsynced either, for a
    cache that checks itself on load (readers still see the old or the new file, whole; after
    a crash it may be the old one, or empty)."""
    tmp = stage_bytes(data, tmp_dir or path.parent, durable=durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def stage_bytes(data: bytes, tmp_dir: Path, *, durable: bool = True) -> Path:
    """``data`` in a new temp file in ``tmp_dir``, fsynced (unless ``durable=False``) and
    readable by all (0o644), for the caller to rename into place (``replace_bytes``;
    ``Store.set_refs`` stages its ref files while the log append is fsynced). Removed again
    if writing it fails."""
    fd, name = tempfile.mkstemp(dir=tmp_dir, prefix=".w-")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return tmp
