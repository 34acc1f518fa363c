"""The durability barrier of the batch writer (``ledger.store.durable``): which file systems one
``syncfs`` is trusted on, when the machine counts as busy, unnamed temp files, and what a
failing ``syncfs`` or ``linkat`` does. Pinned because mutation testing (issue #18) found them
unchecked. A write-back error must fail the batch: names published over data that never
reached the disk are the corruption this module exists to prevent."""

from __future__ import annotations

import ctypes
import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store, batch, durable

linux_only = pytest.mark.skipif(
    sys.platform != "linux" or not Path("/proc/self/fd").is_dir(),
    reason="syncfs, O_TMPFILE and linkat through /proc are Linux's",
)
MAGIC_H = Path("/usr/include/linux/magic.h")
_HAS_TMPFILE = {"ext4", "xfs", "btrfs", "tmpfs", "f2fs"}  # Linux 3.11 and later


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def _fs_name(path: Path) -> str:
    """The file system type of ``path`` as /proc/self/mounts names it (the longest mount)."""
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fs, *_ = line.split()
        point = point.replace("\\040", " ")
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fs
    return kind


# --- which file systems syncfs is trusted on ----------------------------------------------------


@linux_only
def test_one_syncfs_is_trusted_on_local_disk_file_systems_only(tmp_path: Path) -> None:
    kind = _fs_name(tmp_path.resolve())
    assert durable.sync_filesystem(tmp_path) == (
        kind in {"ext4", "ext3", "ext2", "xfs", "btrfs", "f2fs", "tmpfs"}
    )
    shm = Path("/dev/shm")
    if shm.is_dir() and _fs_name(shm) == "tmpfs":
        assert durable.sync_filesystem(shm)
    # proc is no disk file system: whatever syncfs does there says nothing of the store.
    assert durable.sync_filesystem(Path("/proc")) is False


@pytest.mark.skipif(not MAGIC_H.is_file(), reason="no kernel headers here")
def test_the_trusted_file_systems_are_named_by_the_kernels_own_numbers() -> None:
    # statfs(2) f_type values: only ext4 and tmpfs are mounted on the test machines, so the
    # others are checked against linux/magic.h rather than against a real mount.
    defined = {
        name: int(value, 16)
        for name, value in re.findall(r"#define\s+(\w+)\s+0x([0-9A-Fa-f]+)", MAGIC_H.read_text())
    }
    wanted = [
        "EXT4_SUPER_MAGIC", "XFS_SUPER_MAGIC", "BTRFS_SUPER_MAGIC", "F2FS_SUPER_MAGIC",
        "TMPFS_MAGIC",
    ]  # fmt: skip
    assert set(durable._SYNCFS_SAFE) == {defined[n] for n in wanted}


# --- a busy machine -----------------------------------------------------------------------------


def _pending() -> int:
    """Dirty + Writeback bytes, as /proc/meminfo says now."""
    total = 0
    for line in Path("/proc/meminfo").read_bytes().splitlines():
        if line.startswith((b"Dirty:", b"Writeback:")):
            total += int(line.split()[1]) * 1024
    return total


@linux_only
@pytest.mark.parametrize("offset", [-1, 0, 1, 512 << 10])
def test_busy_means_more_than_64_mib_unwritten_besides_ours(offset: int) -> None:
    # Busy exactly when the pending bytes exceed ours plus 64 MiB. The count moves while other
    # processes write: each answer is taken between two equal readings of it.
    slack = 64 << 20
    for _ in range(200):
        before = _pending()
        written = before - slack + offset
        busy = durable.others_dirty(written)
        if _pending() == before:
            assert busy == (offset < 0)
            return
    pytest.skip("/proc/meminfo never held still long enough")


def test_a_machine_whose_unwritten_data_cannot_be_read_counts_as_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No /proc (a container without it): fsync each file rather than risk a long syncfs.
    def no_proc(path: Any, *args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(errno.ENOENT, "no /proc here", str(path))

    monkeypatch.setattr(durable, "open", no_proc, raising=False)
    assert durable.others_dirty(0) is True


# --- the fallback: one fdatasync per file -------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("count", [1, 5])
def test_on_a_busy_machine_every_file_is_fdatasynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, count: int
) -> None:
    synced: list[int] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62))  # always busy
    monkeypatch.setattr(durable.os, "fdatasync", spy)
    fds = [os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT) for i in range(count)]
    try:
        for fd in fds:
            os.write(fd, b"data")
        durable.sync_files(fds, tmp_path, workers, 4 * count)
    finally:
        for fd in fds:
            os.close(fd)
    assert sorted(synced) == sorted(fds)


@linux_only
def test_on_a_quiet_machine_one_syncfs_replaces_the_fdatasyncs(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not durable.sync_filesystem(store.objects.tmp_dir):
        pytest.skip("the store's file system is not one syncfs is trusted on")
    synced: list[int] = []
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)  # never busy
    monkeypatch.setattr(durable.os, "fdatasync", synced.append)
    paths = []
    for i in range(5):
        (tmp_path / f"in{i}").write_bytes(os.urandom(1000))
        paths.append(str(tmp_path / f"in{i}"))
    assert batch.put_files(store.objects, paths) == [
        hash_bytes(Path(p).read_bytes()) for p in paths
    ]
    assert synced == []


# --- a failing syncfs ---------------------------------------------------------------------------


class _FailingSyncfs:
    """The C library, except that syncfs fails with ``err`` (the kernel reports a write-back
    error, EIO, from Linux 5.8; one without syncfs says ENOSYS)."""

    def __init__(self, real: ctypes.CDLL, err: int) -> None:
        self._real = real
        self._err = err
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def syncfs(self, fd: int) -> int:
        self.calls += 1
        ctypes.set_errno(self._err)
        return -1


def _fds_open() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@linux_only
def test_a_write_back_error_fails_the_batch_and_names_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = durable._c()
    assert libc is not None
    if not durable.sync_filesystem(store.objects.tmp_dir):
        pytest.skip("the store's file system is not one syncfs is trusted on")
    failing = _FailingSyncfs(libc, errno.EIO)
    monkeypatch.setattr(durable, "_libc", failing)
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)  # never busy: syncfs is the barrier
    (tmp_path / "in").write_bytes(os.urandom(3000))
    before = _fds_open()
    with pytest.raises(OSError) as raised:
        durable.sync_filesystem(store.objects.tmp_dir)
    assert raised.value.errno == errno.EIO
    with pytest.raises(OSError) as raised:
        batch.put_files(store.objects, [str(tmp_path / "in")])
    assert raised.value.errno == errno.EIO and failing.calls == 2
    assert not store.objects.has(hash_bytes((tmp_path / "in").read_bytes()))
    assert list(store.objects.tmp_dir.iterdir()) == []
    assert _fds_open() == before


@linux_only
def test_a_kernel_without_syncfs_falls_back_to_fdatasync(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = durable._c()
    assert libc is not None
    if not durable.sync_filesystem(store.objects.tmp_dir):
        pytest.skip("the store's file system is not one syncfs is trusted on")
    monkeypatch.setattr(durable, "_libc", _FailingSyncfs(libc, errno.ENOSYS))
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)
    synced: list[int] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(durable.os, "fdatasync", spy)
    assert durable.sync_filesystem(store.objects.tmp_dir) is False
    (tmp_path / "in").write_bytes(os.urandom(3000))
    (oid,) = batch.put_files(store.objects, [str(tmp_path / "in")])
    assert len(synced) == 1
    assert store.objects.get_bytes(oid) == (tmp_path / "in").read_bytes()


# --- unnamed temp files -------------------------------------------------------------------------


@linux_only
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o000, 0o537])
def test_the_umask_is_read_without_changing_it(mask: int) -> None:
    old = os.umask(mask)
    try:
        assert durable.current_umask() == mask
        assert os.umask(mask) == mask  # still in force
    finally:
        os.umask(old)


@linux_only
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o333])
def test_an_unnamed_file_opened_with_the_umask_known_is_read_only(
    tmp_path: Path, mask: int
) -> None:
    # The batch writer reads the umask once and passes it: the file is 0444 all the same.
    if _fs_name(tmp_path.resolve()) not in _HAS_TMPFILE:
        pytest.skip("not a file system known to have O_TMPFILE")
    old = os.umask(mask)
    fds = []
    try:
        for _ in range(2):  # the first call is the probe
            fd = durable.open_unnamed(tmp_path, umask=mask)
            assert fd is not None
            fds.append(fd)
            assert os.fstat(fd).st_mode & 0o777 == 0o444
    finally:
        os.umask(old)
        for fd in fds:
            os.close(fd)


@linux_only
def test_unnamed_temp_files_on_a_linux_disk_file_system(tmp_path: Path) -> None:
    # ext4 and tmpfs have O_TMPFILE (Linux 3.11+): every call gives one, the first (the probe
    # that /proc lets linkat name it) and the later ones, and none leaves an entry.
    if _fs_name(tmp_path.resolve()) not in _HAS_TMPFILE:
        pytest.skip("not a file system known to have O_TMPFILE")
    fds = []
    old = os.umask(0o077)
    try:
        for _ in range(3):
            fd = durable.open_unnamed(tmp_path)
            assert fd is not None
            fds.append(fd)
        for i, fd in enumerate(fds):
            os.write(fd, b"x%d" % i)
            assert os.fstat(fd).st_mode & 0o777 == 0o444  # whatever the umask
        assert list(tmp_path.iterdir()) == []
        for i, fd in enumerate(fds):
            assert durable.link_unnamed(fd, tmp_path / f"n{i}")
    finally:
        os.umask(old)
        for fd in fds:
            os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n0", "n1", "n2"]
    assert (tmp_path / "n2").read_bytes() == b"x2"


@linux_only
def test_no_unnamed_file_where_the_folder_is_missing_and_an_error_for_a_file(
    tmp_path: Path,
) -> None:
    assert durable.open_unnamed(tmp_path / "missing") is None
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        durable.open_unnamed(tmp_path / "file")


@linux_only
def test_naming_an_unnamed_file_fails_loudly_but_for_an_existing_name(tmp_path: Path) -> None:
    fd = durable.open_unnamed(tmp_path)
    if fd is None:
        pytest.skip("this file system has no O_TMPFILE")
    try:
        (tmp_path / "taken").write_bytes(b"old")
        assert durable.link_unnamed(fd, tmp_path / "taken") is False
        assert (tmp_path / "taken").read_bytes() == b"old"
        # Anything else (here: no such folder) is an error, never a silent "not named":
        # the batch writer would take that for an object stored meanwhile.
        with pytest.raises(FileNotFoundError):
            durable.link_unnamed(fd, tmp_path / "missing" / "x")
    finally:
        os.close(fd)


@linux_only
def test_an_unnamed_file_is_named_at_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A ledger given as a relative path (`--ledger .ledger`) names its objects relative to the
    # working directory.
    if _fs_name(tmp_path.resolve()) not in _HAS_TMPFILE:
        pytest.skip("not a file system known to have O_TMPFILE")
    monkeypatch.chdir(tmp_path)
    fd = durable.open_unnamed(Path("."))
    assert fd is not None
    try:
        os.write(fd, b"rel")
        assert durable.link_unnamed(fd, Path("named"))
    finally:
        os.close(fd)
    assert (tmp_path / "named").read_bytes() == b"rel"


_FRESH_CHILD = """
import sys
from pathlib import Path
from ledger.store import durable
d = Path(sys.argv[1])
fd = durable.open_unnamed(d)
(d / "taken").write_bytes(b"old")
print(durable.link_unnamed(fd, d / "taken"), (d / "taken").read_bytes().decode())
"""


@linux_only
def test_a_fresh_process_tells_an_existing_name_from_an_error(tmp_path: Path) -> None:
    # The C library is loaded once per process, with errno kept for the caller: without it
    # every failed linkat reads errno 0, and an existing name (keep the object there) could
    # not be told from an error. A fresh process, so that the loading itself is what runs.
    if _fs_name(tmp_path.resolve()) not in _HAS_TMPFILE:
        pytest.skip("not a file system known to have O_TMPFILE")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_CHILD, str(tmp_path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.split() == ["False", "old"], done.stderr


@linux_only
def test_threads_racing_for_a_new_folder_all_get_unnamed_files(tmp_path: Path) -> None:
    # The batch writer's workers start together on a store's tmp/: one probes whether linkat
    # can name an unnamed file there, the others wait for its answer and use it.
    import threading

    if _fs_name(tmp_path.resolve()) not in _HAS_TMPFILE:
        pytest.skip("not a file system known to have O_TMPFILE")
    for round_ in range(10):
        folder = tmp_path / f"tmp{round_}"
        folder.mkdir()
        start = threading.Barrier(8)
        got: list[int | None] = []

        def open_one(
            folder: Path = folder, start: threading.Barrier = start, got: list[int | None] = got
        ) -> None:
            start.wait()
            got.append(durable.open_unnamed(folder))

        threads = [threading.Thread(target=open_one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for fd in got:
            if fd is not None:
                os.close(fd)
        assert len(got) == 8 and None not in got
        assert list(folder.iterdir()) == []  # the probe's name is gone


# --- the names' barrier (sync_dirs) -------------------------------------------------------------


class _CountingSyncfs:
    """The C library, counting its syncfs calls."""

    def __init__(self, real: ctypes.CDLL) -> None:
        self._real = real
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def syncfs(self, fd: int) -> int:
        self.calls += 1
        return int(self._real.syncfs(fd))


@linux_only
@pytest.mark.parametrize("machine", ["quiet", "busy", "untrusted"])
def test_new_names_are_made_durable_by_one_syncfs_or_one_fsync_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine: str
) -> None:
    """A quiet machine on a file system whose syncfs is trusted: one syncfs for all the
    folders; a busy one, or another file system: each folder fsynced once; no folder: nothing."""
    from concurrent.futures import ThreadPoolExecutor

    libc = durable._c()
    assert libc is not None
    if not durable.sync_filesystem(tmp_path):
        pytest.skip("tmp_path's file system is not one syncfs is trusted on")
    counting = _CountingSyncfs(libc)
    monkeypatch.setattr(durable, "_libc", counting)
    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62) if machine == "busy" else 1 << 62)
    if machine == "untrusted":
        monkeypatch.setattr(durable, "_SYNCFS_SAFE", {})
    synced: list[Path] = []
    monkeypatch.setattr(durable, "fsync_dir", synced.append)
    folders = [tmp_path / "b", tmp_path / "a", tmp_path / "c"]
    for d in folders:
        d.mkdir()
    with ThreadPoolExecutor(2) as pool:
        durable.sync_dirs([], tmp_path, pool)
        assert (counting.calls, synced) == (0, [])
        durable.sync_dirs(folders, tmp_path, pool)
    if machine == "quiet":
        assert (counting.calls, synced) == (1, [])
    else:
        assert (counting.calls, synced) == (0, sorted(folders))


def test_a_named_temp_file_is_linked_never_over_an_existing_name(tmp_path: Path) -> None:
    first, second, final = tmp_path / "a", tmp_path / "b", tmp_path / "obj"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    assert durable.link_named(first, final)
    assert not durable.link_named(second, final)
    assert final.read_bytes() == b"first"
    assert first.exists() and second.exists()  # the caller removes its temp file


@pytest.mark.parametrize("err", [errno.EPERM, errno.EOPNOTSUPP])
def test_without_hard_links_a_named_temp_file_is_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    # vfat and some FUSE file systems refuse link(2): a check and a rename instead.
    def no_links(src: object, dst: object) -> None:
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "link", no_links)
    first, second, final = tmp_path / "a", tmp_path / "b", tmp_path / "obj"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    assert durable.link_named(first, final)
    assert not first.exists()
    assert not durable.link_named(second, final)
    assert final.read_bytes() == b"first"


def test_another_link_error_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(src: object, dst: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "link", read_only)
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(OSError, match="Read-only"):
        durable.link_named(tmp_path / "a", tmp_path / "obj")
    assert not (tmp_path / "obj").exists()


def test_of_writers_racing_to_store_one_object_exactly_one_stored_it(tmp_path: Path) -> None:
    # Each writer checks that the object is missing, then names its temp file: all can pass
    # the check, and a rename let each of them report the write as its own (new bytes in a
    # checkpoint's report counted twice). Threads released at once, many rounds.
    import threading

    from ledger.store import Store

    store = Store.init(tmp_path / ".ledger")
    for round_ in range(40):
        data = b"round %d " % round_ * 100
        barrier = threading.Barrier(4)
        news: list[bool] = []

        def put(
            data: bytes = data, barrier: threading.Barrier = barrier, news: list[bool] = news
        ) -> None:
            barrier.wait()
            news.append(store.objects.put_bytes_new(data, compress=False)[1])

        threads = [threading.Thread(target=put) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(news) == [False, False, False, True], round_
    assert list(store.objects.tmp_dir.iterdir()) == []
