"""Storing many files at once (``ledger.store.batch``) and the pipelined large-file put: the
same ids, codecs and content as one put at a time, nothing left in the temp directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger._hashing import hash_bytes, hash_file
from ledger.store import Store, batch
from ledger.store.objects import CODEC_RAW, CODEC_ZSTD, PIPE_CHUNK, header_for


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def _files(root: Path) -> list[str]:
    root.mkdir()
    contents = {
        "empty": b"",
        "text": b"hello world\n" * 500,  # compressible: stored zstd
        "random": os.urandom(40_000),  # stored raw
        "dup-a": b"same bytes",
        "dup-b": b"same bytes",  # the same object twice in one batch
        "big": os.urandom(batch.SMALL + 5),  # streamed by put_stream
    }
    for name, data in contents.items():
        (root / name).write_bytes(data)
    return [str(root / n) for n in contents]


def test_put_files_matches_one_at_a_time(store: Store, tmp_path: Path) -> None:
    paths = _files(tmp_path / "in")
    oids = batch.put_files(store.objects, paths)
    assert oids == [hash_file(p) for p in paths]
    for p, oid in zip(paths, oids, strict=True):
        assert store.objects.get_bytes(oid) == Path(p).read_bytes()
        store.objects.verify(oid)
    pairs = zip(paths, oids, strict=True)
    codec = {Path(p).name: store.objects.path_of(o).read_bytes()[0] for p, o in pairs}
    assert codec["text"] == CODEC_ZSTD and codec["random"] == CODEC_RAW
    assert list(store.objects.tmp_dir.iterdir()) == []
    # Stored again: every object is already there, nothing is rewritten.
    assert batch.put_files(store.objects, paths) == oids
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_put_files_in_several_batches(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "_BATCH", 2)
    paths = _files(tmp_path / "in")
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]


def test_a_failed_read_leaves_no_temp_files(store: Store, tmp_path: Path) -> None:
    paths = _files(tmp_path / "in")
    with pytest.raises(FileNotFoundError):
        batch.put_files(store.objects, [*paths[:3], str(tmp_path / "gone"), *paths[3:]])
    assert list(store.objects.tmp_dir.iterdir()) == []


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte counts of every ``os.readv`` made from now on (this thread and the pool's)."""
    counts: list[int] = []
    real = os.readv

    def readv(fd: int, buffers: list[memoryview]) -> int:
        n = real(fd, buffers)
        counts.append(n)
        return n

    monkeypatch.setattr(os, "readv", readv)
    return counts


def test_a_file_of_its_known_size_is_staged_in_one_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The size the digest saw ends the read: no second read to find the end of the file.
    paths = _files(tmp_path / "in")[1:5]  # text, random, dup-a, dup-b: all small, none empty
    sizes = [os.path.getsize(p) for p in paths]
    reads = _counting_reads(monkeypatch)
    assert batch.put_files(store.objects, paths, sizes) == [hash_file(p) for p in paths]
    assert sorted(reads) == sorted(sizes)
    reads.clear()
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    assert sorted(reads) == sorted([0] * len(paths) + sizes)  # without sizes: read to the end


@pytest.mark.parametrize("delta", [-1, 1, -40_000])
def test_a_file_whose_size_changed_is_read_to_its_end(
    store: Store, tmp_path: Path, delta: int
) -> None:
    # The sizes are a hint: a file that grew or shrank since its digest is stored whole,
    # under the id of what it holds now.
    paths = _files(tmp_path / "in")
    sizes = [max(0, os.path.getsize(p) + delta) for p in paths]
    oids = batch.put_files(store.objects, paths, sizes)
    assert oids == [hash_file(p) for p in paths]
    for p, oid in zip(paths, oids, strict=True):
        assert store.objects.get_bytes(oid) == Path(p).read_bytes()


def test_sizes_must_match_the_paths(store: Store, tmp_path: Path) -> None:
    paths = _files(tmp_path / "in")
    with pytest.raises(ValueError, match="5 sizes for 6 paths"):
        batch.put_files(store.objects, paths, [1] * 5)
    assert list(store.objects.tmp_dir.iterdir()) == []


@pytest.mark.parametrize("size", [0, 5, PIPE_CHUNK - 1, PIPE_CHUNK, 2 * PIPE_CHUNK + 7])
def test_pipelined_put_file_round_trip(store: Store, tmp_path: Path, size: int) -> None:
    src = tmp_path / "src.bin"
    data = os.urandom(size)
    src.write_bytes(data)
    oid = store.objects.put_file(src)
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data
    assert store.objects.path_of(oid).read_bytes() == header_for(size, compressed=False) + data


def _stored_names(store: Store) -> list[Path]:
    return [p for p in (store.objects.root).rglob("*") if p.is_file()]


def test_content_is_durable_before_any_object_has_a_name(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.store import durable

    paths = _files(tmp_path / "in")
    big = batch.SMALL + 5  # streamed by put_stream, durable on its own before the barrier
    seen: list[list[Path]] = []
    real = batch.sync_files

    def barrier(fds: list[int], dir: Path, workers: int, written: int) -> None:
        seen.append(_stored_names(store))
        real(fds, dir, workers, written)

    monkeypatch.setattr(batch, "sync_files", barrier)
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)  # a quiet machine: one barrier
    batch.put_files(store.objects, paths)
    assert len(seen) == 1
    streamed = len(header_for(big, compressed=False)) + big
    assert [p.stat().st_size for p in seen[0]] == [streamed]  # only the streamed one


@pytest.mark.parametrize("unnamed", [True, False])
@pytest.mark.parametrize("syncfs", [True, False])
def test_each_way_of_writing_gives_the_same_objects(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool, syncfs: bool
) -> None:
    """Unnamed temp files or named ones (no O_TMPFILE, no /proc), one syncfs or an fdatasync
    of each: the same ids, content, read-only files, and nothing left in tmp/."""
    from ledger.store import durable

    if not unnamed:
        monkeypatch.setattr(
            batch, "open_unnamed", lambda dir, mode=0o444, umask=None, direct=False: None
        )
    if not syncfs:
        monkeypatch.setattr(durable, "sync_filesystem", lambda path: False)
    paths = _files(tmp_path / "in")
    old = os.umask(0o077)  # the objects are 0444 whatever the umask
    try:
        oids = batch.put_files(store.objects, paths)
    finally:
        os.umask(old)
    assert oids == [hash_file(p) for p in paths]
    for p, oid in zip(paths, oids, strict=True):
        assert store.objects.get_bytes(oid) == Path(p).read_bytes()
        assert store.objects.path_of(oid).stat().st_mode & 0o777 == 0o444
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_unnamed_temp_files_where_linux_has_them(tmp_path: Path) -> None:
    from ledger.store import durable

    if not hasattr(os, "O_TMPFILE") or not Path("/proc/self/fd").is_dir():
        pytest.skip("no O_TMPFILE or no /proc here: named temp files are used")
    fd = durable.open_unnamed(tmp_path)
    if fd is None:
        pytest.skip("this file system has no O_TMPFILE")
    try:
        os.write(fd, b"x")
        assert list(tmp_path.iterdir()) == []  # no name until it is linked
        assert durable.link_unnamed(fd, tmp_path / "a")
        assert not durable.link_unnamed(fd, tmp_path / "a")  # an existing name is kept
    finally:
        os.close(fd)
    assert (tmp_path / "a").read_bytes() == b"x"
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o444


def test_pipelined_put_stream_without_readinto(store: Store) -> None:
    """A stream that is not a file (only ``read``) is copied piece by piece as well."""
    import io

    data = os.urandom(2 * PIPE_CHUNK + 11)

    class ReadOnly:
        def __init__(self) -> None:
            self._f = io.BytesIO(data)

        def read(self, n: int = -1) -> bytes:
            return self._f.read(n)

    oid = store.objects.put_stream(ReadOnly())  # type: ignore[arg-type]
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data


@pytest.mark.parametrize("busy", [True, False])
def test_syncfs_only_while_little_else_is_unwritten(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, busy: bool
) -> None:
    """syncfs would also wait for every other writer's data: with more of it pending than the
    slack, each file is fsynced instead."""
    from ledger.store import durable

    calls: list[Path] = []
    real = durable.sync_filesystem

    def spy(path: Path) -> bool:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(durable, "sync_filesystem", spy)
    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62) if busy else 1 << 62)
    paths = _files(tmp_path / "in")
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    # Quiet: one syncfs for the content, one for the names.
    assert calls == ([] if busy else [store.objects.tmp_dir, store.objects.root])


def test_on_a_busy_machine_each_file_is_synced_before_any_name(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.store import durable

    synced: list[int] = []
    names: list[int] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        synced.append(fd)
        names.append(len(_stored_names(store)))
        real(fd)

    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62))
    monkeypatch.setattr(batch.os, "fdatasync", spy)
    paths = _files(tmp_path / "in")
    assert batch.put_files(store.objects, paths) == [hash_file(p) for p in paths]
    assert len(synced) == len(paths) - 1  # every small file; the big one is put_stream's
    assert set(names) <= {0, 1}  # no small file's object was named before all were synced
