"""``open_regular`` and ``read_regular``, the one door every read of a ledger's or a remote's
file goes through: what each refusal says, that a refusal leaves no descriptor open, that the
file handed back is an ordinary (blocking) one, and the size bound at its exact edge. Real
FIFOs, symlinks, directories and ``/dev/null``; no mocks."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from ledger.store.safe_read import NotRegularError, open_regular, read_regular


def _fds_on(path: Path) -> list[str]:
    """This process's open descriptors that name ``path``."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                out.append(fd)
        except OSError:  # the descriptor listdir itself used, closed since
            pass
    return out


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO (named pipe), not a regular file"),
        (lambda p: p.mkdir(), "is a directory, not a regular file"),
    ],
    ids=["fifo", "directory"],
)
def test_each_kind_of_file_is_named_in_the_refusal(tmp_path: Path, make, says: str) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "config.json"
    make(target)
    with pytest.raises(NotRegularError) as e:
        open_regular(target)
    assert str(e.value).startswith(f"{target} {says}; it was not read"), str(e.value)
    assert "restore the file" in e.value.hint  # type: ignore[attr-defined]
    assert _fds_on(target) == []  # the descriptor opened to look at it is closed


def test_a_device_is_named_as_one_and_not_read() -> None:
    """``/dev/null`` (a character device) where a file was expected: never read as empty."""
    before = len(_fds_on(Path("/dev/null")))  # stdin and others may be open on it already
    with pytest.raises(NotRegularError, match=r"^/dev/null is a device, not a regular file"):
        read_regular("/dev/null", 1024)
    assert len(_fds_on(Path("/dev/null"))) == before


def test_a_refused_fifo_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """A server or a long verify meeting many planted FIFOs must not run out of descriptors."""
    fifo = tmp_path / "chain.jsonl"
    os.mkfifo(fifo)
    for _ in range(3):
        with pytest.raises(NotRegularError, match="FIFO"):
            read_regular(fifo, 100)
    assert _fds_on(fifo) == []


def test_links_and_writer_side_fifos_are_refused_by_the_open_itself(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.write_bytes(b"x")
    link = tmp_path / "ref"
    link.symlink_to(target)
    with pytest.raises(NotRegularError, match=r"ref is a symbolic link, not a regular file"):
        read_regular(link, 10)
    fifo = tmp_path / "log"
    os.mkfifo(fifo)  # opened for appending with no reader: ENXIO, not a wait
    with pytest.raises(NotRegularError, match=r"log is a socket or a FIFO, not a regular file"):
        open_regular(fifo, "ab")


def test_other_errors_come_through_as_open_raises_them(tmp_path: Path) -> None:
    """A missing file is FileNotFoundError (callers take it as absent); any other error of the
    open is raised as it is, not turned into a refusal or swallowed."""
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing", 10)
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError) as e:
        open_regular(tmp_path / "d", "r+b")
    assert e.value.errno == errno.EISDIR


def test_the_file_handed_back_blocks_as_an_ordinary_open_does(tmp_path: Path) -> None:
    """O_NONBLOCK is only for the open (a FIFO must not wait for a writer); the descriptor
    handed back has it cleared, for every mode."""
    f0 = tmp_path / "f"
    f0.write_bytes(b"abc")
    for mode in ("rb", "r+b", "ab"):
        with open_regular(f0, mode) as f:
            flags = fcntl.fcntl(f.fileno(), fcntl.F_GETFL)
            assert flags & os.O_NONBLOCK == 0, mode
            assert fcntl.fcntl(f.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    with open_regular(f0, "ab") as f:
        f.write(b"d")
    assert f0.read_bytes() == b"abcd"


def test_a_file_of_exactly_the_bound_is_read_whole_and_one_byte_more_is_refused(
    tmp_path: Path,
) -> None:
    f = tmp_path / "origin.json"
    f.write_bytes(b"a" * 100)
    assert read_regular(f, 100) == b"a" * 100
    assert read_regular(f, 101) == b"a" * 100
    with pytest.raises(NotRegularError) as e:
        read_regular(f, 99)
    assert str(e.value).startswith(f"{f} holds more than the 99 bytes such a file may hold")
    assert "restore it from a copy" in e.value.hint  # type: ignore[attr-defined]
    f.write_bytes(b"")
    assert read_regular(f, 0) == b""
    f.write_bytes(b"a")
    with pytest.raises(NotRegularError, match="more than the 0 bytes"):
        read_regular(f, 0)


def test_errors_name_the_file_as_the_caller_shows_it(tmp_path: Path) -> None:
    """``shown``: a remote's file is named by its place on the remote, not a local path."""
    f = tmp_path / "big"
    f.write_bytes(b"a" * 10)
    with pytest.raises(NotRegularError, match=r"^remote:objects/big holds more than the 5 bytes"):
        read_regular(f, 5, shown="remote:objects/big")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularError, match=r"^remote:pipe is a FIFO"):
        read_regular(fifo, 5, shown="remote:pipe")


def test_a_name_is_opened_relative_to_a_directory_descriptor(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_bytes(b"12345")
    dfd = os.open(tmp_path / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_regular("x", 5, dir_fd=dfd, shown="d/x") == b"12345"
        (tmp_path / "d" / "y").symlink_to(tmp_path / "d" / "x")
        with pytest.raises(NotRegularError, match=r"^d/y is a symbolic link"):
            read_regular("y", 5, dir_fd=dfd, shown="d/y")
    finally:
        os.close(dfd)
