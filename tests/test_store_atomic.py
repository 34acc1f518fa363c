"""Crash-safe writes (``ledger.store.atomic``): a replaced file is whole, readable by all, and no
temp file or descriptor is left, whether the write succeeds or fails. Refs, anchors and the
caches go through it. Pinned because mutation testing (issue #18) found it unchecked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.store.atomic import atomic_write_bytes, fsync_dir, temp_file


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_replaced_file_is_whole_readable_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "refs" / "main"
    target.parent.mkdir()
    target.write_bytes(b"old content, longer than the new one\n")
    before = _fds()
    old = os.umask(0o077)
    try:
        atomic_write_bytes(target, b"new\n")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o644  # whatever the umask
    assert os.listdir(target.parent) == ["main"]  # the temp file was renamed, not copied
    fsync_dir(target.parent)
    assert _fds() == before


def test_the_temp_file_goes_where_it_is_told(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "out").mkdir()
    atomic_write_bytes(tmp_path / "out" / "f", b"x", tmp_dir=tmp_path / "tmp")
    assert (tmp_path / "out" / "f").read_bytes() == b"x"
    assert list((tmp_path / "tmp").iterdir()) == []
    # Another file system's temp dir cannot be renamed from: the write fails, and leaves
    # neither the target nor a temp file.
    shm = Path("/dev/shm")
    if shm.is_dir() and os.stat(shm).st_dev != os.stat(tmp_path).st_dev and os.access(shm, os.W_OK):
        before = set(shm.iterdir())
        with pytest.raises(OSError):
            atomic_write_bytes(tmp_path / "out" / "g", b"y", tmp_dir=shm)
        assert set(shm.iterdir()) == before
        assert not (tmp_path / "out" / "g").exists()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_temp_file_is_removed_unless_renamed_away(tmp_path: Path) -> None:
    before = _fds()
    with temp_file(tmp_path) as (f, path):
        f.write(b"dropped")
    assert not path.exists()
    with pytest.raises(RuntimeError), temp_file(tmp_path) as (f, path):
        f.write(b"half")
        raise RuntimeError("writer failed")
    assert not path.exists()
    with temp_file(tmp_path, prefix="keep-") as (f, path):
        f.write(b"kept")
        f.close()
        os.replace(path, tmp_path / "kept")
    assert path.name.startswith("keep-")
    assert (tmp_path / "kept").read_bytes() == b"kept"
    assert list(tmp_path.iterdir()) == [tmp_path / "kept"]
    assert _fds() == before
