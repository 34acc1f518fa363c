"""The names given by the batch writer (``ledger.store.batch``) are made durable once per call:
one ``syncfs`` on a quiet machine (the next batch's content barrier counts), else one fsync
of each folder that got a name, and never before the names are there. And the descriptor
table that holds a batch's open temp files is grown once, before the pool's threads open any."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from ledger._hashing import hash_file
from ledger.store import Store, batch, durable


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def _files(root: Path, n: int) -> list[str]:
    root.mkdir()
    paths = []
    for i in range(n):
        path = root / f"f{i}"
        path.write_bytes(i.to_bytes(4, "big") + os.urandom(100))
        paths.append(str(path))
    return paths


# The smallest batch the writer makes (``_batch_size``): the tests make it the batch size.
_SMALLEST = 16


@pytest.fixture(autouse=True)
def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "_BATCH", _SMALLEST)


def _named(store: Store) -> int:
    return sum(1 for p in store.objects.root.rglob("*") if p.is_file())


class _Spy:
    """Records every syncfs and directory fsync, with how many objects had names then."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.syncfs: list[tuple[Path, int]] = []
        self.fsynced: list[tuple[Path, int]] = []
        real_syncfs, real_fsync = durable.sync_filesystem, os.fsync

        def syncfs(path: Path) -> bool:
            self.syncfs.append((path, _named(store)))
            return real_syncfs(path)

        def fsync(fd: int) -> None:
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
            if path.is_dir():
                self.fsynced.append((path, _named(store)))
            real_fsync(fd)

        if not Path("/proc/self/fd").is_dir():
            pytest.skip("no /proc here to name the folders fsynced")
        monkeypatch.setattr(durable, "sync_filesystem", syncfs)
        monkeypatch.setattr(os, "fsync", fsync)


def _busy(monkeypatch: pytest.MonkeyPatch, busy: bool) -> None:
    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62) if busy else 1 << 62)


def test_quiet_one_syncfs_per_batch_and_one_for_the_last_names(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's content barrier also covers the names of the batch before it; the last
    batch's names get one more syncfs, and no folder is fsynced one by one."""
    if not durable.sync_filesystem(store.objects.tmp_dir):
        pytest.skip("this file system's syncfs is not trusted: folders are fsynced")
    _busy(monkeypatch, False)
    spy = _Spy(store, monkeypatch)
    paths = _files(tmp_path / "in", 2 * _SMALLEST + 3)  # three batches

    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    assert spy.fsynced == []
    tmp, root = store.objects.tmp_dir, store.objects.root
    # Content of each batch before any of its names; the names' barrier after the last one.
    n = _SMALLEST
    assert spy.syncfs == [(tmp, 0), (tmp, n), (tmp, 2 * n), (root, 2 * n + 3)]


def test_busy_each_folder_is_fsynced_once_after_all_names(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With much of others' data unwritten (no syncfs), each folder that got a name, or a new
    folder, is fsynced once for the whole call, not once per batch."""
    _busy(monkeypatch, True)
    spy = _Spy(store, monkeypatch)
    paths = _files(tmp_path / "in", 2 * _SMALLEST + 3)

    oids = batch.put_files(store.objects, paths)
    assert spy.syncfs == []
    fans = {store.objects.path_of(oid).parent for oid in oids}
    # objects/b3 is new in a new store, like every fan: objects/ and b3/ got entries too.
    (algo,) = {fan.parent for fan in fans}
    dirs = [d for d, _ in spy.fsynced]
    assert sorted(dirs) == sorted(set(dirs))  # once each
    assert set(dirs) == fans | {algo, store.objects.root}
    assert {n for _, n in spy.fsynced} == {len(paths)}  # after every name is given


def test_names_of_a_batch_before_a_failed_one_are_made_durable(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer may find an object named by an earlier batch and link it: its folder is
    fsynced even though the call fails."""
    _busy(monkeypatch, True)
    spy = _Spy(store, monkeypatch)
    paths = _files(tmp_path / "in", _SMALLEST)  # the first batch
    gone = str(tmp_path / "in" / "gone")  # fails the second

    with pytest.raises(FileNotFoundError):
        batch.put_files(store.objects, [*paths, gone])
    fans = {store.objects.path_of(hash_file(p)).parent for p in paths}
    assert fans <= {d for d, _ in spy.fsynced}
    assert _named(store) == len(paths)
    assert list(store.objects.tmp_dir.iterdir()) == []


def _fd_table_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("FDSize:"):
            return int(line.split()[1])
    pytest.skip("no FDSize in /proc/self/status here")


def test_the_descriptor_table_is_grown_once_before_any_file_is_staged(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Grown by the kernel one doubling at a time while the pool's threads share it, each
    growth stalled every opening thread for an RCU grace period: room for the whole batch
    is made before the first file is opened."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("no /proc here")
    monkeypatch.setattr(batch, "_BATCH", 4096)
    n = 600
    if _fd_table_size() > n:
        pytest.skip("this process's descriptor table is large already")
    paths = _files(tmp_path / "in", n)
    seen: list[int] = []
    real = batch._stage

    def stage(*args: object) -> object:
        seen.append(_fd_table_size())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_stage", stage)
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    assert min(seen) > n
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_making_room_never_touches_a_descriptor_in_use(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    fd = os.open(path, os.O_RDONLY)
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, fd + 50)  # where the room is made
    try:
        batch._room_for_descriptors(50)
        assert os.read(high, 1) == b"x"  # still open, still the same file
    finally:
        os.close(high)
        os.close(fd)


def test_files_staged_several_to_a_task_keep_their_order(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "_BATCH", 4096)
    paths = _files(tmp_path / "in", 200)  # tasks of a dozen files
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_a_failed_read_inside_a_task_leaves_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task stops at the missing file; every temp file staged before it, by it or by
    the other tasks, is dropped, and no object gets a name."""
    monkeypatch.setattr(batch, "_BATCH", 4096)
    paths = _files(tmp_path / "in", 200)
    paths.insert(101, str(tmp_path / "in" / "gone"))
    with pytest.raises(FileNotFoundError):
        batch.put_files(store.objects, paths)
    assert list(store.objects.tmp_dir.iterdir()) == []
    assert _named(store) == 0
