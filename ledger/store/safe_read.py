"""Opening a ledger's or a remote's files: regular files only, and never more than expected.

A FIFO, a socket, a device or a symlink planted where a ledger keeps a file (an object, the
log, a ref, ``config.json``, a remote's ``origins/*.json``) would otherwise stop a reader for
good (a FIFO nobody writes) or feed it without end (a link to ``/dev/zero``). Every read of
such a file opens it here: ``O_NOFOLLOW`` (a symlink in the last place is refused, not
followed), ``O_NONBLOCK`` (opening a FIFO never waits for a writer), then ``fstat`` must say
a regular file; ``read_regular`` reads at most ``max_bytes``. ``dir_fd`` opens a name
relative to a directory already opened without following links (path remotes walk that way).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO, cast

from ..errors import IntegrityError

__all__ = ["NotRegularError", "open_regular", "read_regular", "read_small"]

_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_PIECE = 1 << 16  # the least a read asks for once the size read at the open is passed
_MODES = {"rb": os.O_RDONLY, "r+b": os.O_RDWR, "ab": os.O_WRONLY | os.O_APPEND}


class NotRegularError(IntegrityError):
    """A ledger or remote file is a symlink, FIFO, socket or device, or larger than it may be."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _refuse(path: str | Path, what: str) -> NotRegularError:
    return NotRegularError(
        f"{path} is {what}, not a regular file; it was not read",
        hint="ledger keeps only regular files there: remove it, then restore the file from a "
        "copy or a remote (`ledger verify` lists what is damaged)",
    )


def _open_fd(
    path: str | Path, flags: int, dir_fd: int | None, shown: str | Path
) -> tuple[int, int]:
    """(descriptor, size) of ``path`` if it is a regular file and not a symlink (still
    ``O_NONBLOCK``); FileNotFoundError as ``open`` raises it; NotRegularError for anything
    else there. Nothing is left open when it refuses."""
    try:
        fd = os.open(path, flags | _FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refuse(shown, "a symbolic link") from None
        if e.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing without a reader
            raise _refuse(shown, "a socket or a FIFO") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(shown, _kind(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def open_regular(
    path: str | Path, mode: str = "rb", *, dir_fd: int | None = None, shown: str | Path = ""
) -> BinaryIO:
    """``path`` opened (``rb``, ``r+b`` or ``ab``) if it is a regular file and not a symlink;
    FileNotFoundError as ``open`` raises it; NotRegularError for anything else there.
    ``shown``: how errors name the file (default: ``path``)."""
    fd, _ = _open_fd(path, _MODES[mode], dir_fd, shown or path)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return cast(BinaryIO, os.fdopen(fd, mode))
    except BaseException:
        os.close(fd)
        raise


def _read_fd(fd: int, max_bytes: int, guess: int) -> bytes | None:
    """What ``fd`` holds from its position to the end, or None once past ``max_bytes``
    (never more than ``max_bytes + 1`` in memory). ``guess``: the size fstat gave, a hint for
    the first read; the reads go on to the end, wherever that is by then."""
    parts: list[bytes] = []
    got = 0
    while got <= max_bytes:
        piece = os.read(fd, min(max_bytes + 1 - got, max(guess + 1 - got, _PIECE)))
        if not piece:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        parts.append(piece)
        got += len(piece)
    return None


def read_regular(
    path: str | Path, max_bytes: int, *, dir_fd: int | None = None, shown: str | Path = ""
) -> bytes:
    """The content of the regular file ``path``; NotRegularError if it is not one, or holds
    more than ``max_bytes`` (read in pieces: never more than ``max_bytes + 1`` in memory).

    Read with ``os.read`` on the descriptor, no file object: readers of many small files
    (``reindex`` reads every ref and every record) paid more for the buffered file object
    than for the read (18 us a ref against 7 us)."""
    shown = shown or path
    fd, size = _open_fd(path, os.O_RDONLY, dir_fd, shown)
    try:  # O_NONBLOCK is kept: it changes nothing for a regular file
        data = _read_fd(fd, max_bytes, size)
    finally:
        os.close(fd)
    if data is None:
        raise NotRegularError(
            f"{shown} holds more than the {max_bytes} bytes such a file may hold; it was not read",
            hint="it was damaged or planted: restore it from a copy or a remote",
        )
    return data


def read_small(path: str | Path, max_bytes: int) -> bytes | None:
    """``read_regular`` for files that may be large: None, with nothing read, for one that
    holds more than ``max_bytes`` (the caller reads it in pieces instead)."""
    fd, size = _open_fd(path, os.O_RDONLY, None, path)
    try:
        return None if size > max_bytes else _read_fd(fd, max_bytes, size)
    finally:
        os.close(fd)
