"""Crash-safe writes (``ledger.store.atomic``): a replaced file is whole, readable by all, and no
temp file or descriptor is left, whether the write succeeds or fails. Refs, anchors and the
caches go through it. Pinned because mutation testing (issue #18) found it unchecked."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ledger.store.atomic import atomic_write_bytes, fsync_dir, replace_bytes, temp_file


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


def test_replace_bytes_makes_its_temp_file_in_tmp_dir_or_beside_the_target(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """``set_refs`` passes the store's tmp/; without a tmp_dir the temp file is a hidden one
    beside the target (never the system's temp dir, which may be another file system)."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "refs").mkdir()
    made: list[tuple[Path, str]] = []
    real = tempfile.mkstemp

    def mkstemp(*, dir: Path, prefix: str) -> tuple[int, str]:
        made.append((Path(dir), prefix))
        return real(dir=dir, prefix=prefix)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    replace_bytes(tmp_path / "refs" / "a", b"a\n", tmp_path / "tmp")
    replace_bytes(tmp_path / "refs" / "b", b"b\n")
    assert made == [(tmp_path / "tmp", ".w-"), (tmp_path / "refs", ".w-")]
    assert (tmp_path / "refs" / "a").read_bytes() == b"a\n"
    assert sorted(os.listdir(tmp_path / "refs")) == ["a", "b"]
    assert os.listdir(tmp_path / "tmp") == []
