"""The batch writer of ``store_inputs`` (``ledger.store.batch``) at its edges: which files wait
for the one durability barrier, the codec each object gets, the descriptors it holds, a write
that fails midway, a low limit on open files, the names made durable once per call and the
descriptor table grown once. Pinned because mutation testing (issue #18) found them unchecked;
the tests look at what ends up in the store, but for the barriers (which syncs are made, when)
and the table (its size in /proc)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store, batch

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20  # files up to this size wait for the batch's barrier (docs/format.md)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


@pytest.fixture(params=[True, False], ids=["unnamed", "named"])
def unnamed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways of writing temp files: O_TMPFILE, and named ones (no O_TMPFILE, no /proc)."""
    if not request.param:
        monkeypatch.setattr(
            batch, "open_unnamed", lambda dir, mode=0o444, umask=None, direct=False: None
        )
    return bool(request.param)


def _write(root: Path, contents: dict[str, bytes]) -> list[str]:
    root.mkdir(exist_ok=True)
    for name, data in contents.items():
        (root / name).write_bytes(data)
    return [str(root / n) for n in contents]


def _names(store: Store) -> list[Path]:
    return sorted(p for p in store.objects.root.rglob("*") if p.is_file())


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_files_up_to_one_mib_wait_for_the_barrier(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file of 1 MiB is staged with the batch, named only after the barrier; one byte more
    # and it is streamed, durable and named on its own before the barrier.
    from ledger.store import durable

    paths = _write(
        tmp_path / "in",
        {"mib": os.urandom(MIB), "over": os.urandom(MIB + 1), "small": b"x" * 100},
    )
    seen: list[list[Path]] = []
    real = batch.sync_files

    def barrier(fds: list[int], dir: Path, workers: int, written: int) -> None:
        seen.append(_names(store))
        real(fds, dir, workers, written)

    monkeypatch.setattr(batch, "sync_files", barrier)
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)  # a quiet machine: one barrier
    oids = batch.put_files(store.objects, paths)
    assert oids == [hash_bytes(Path(p).read_bytes()) for p in paths]
    assert seen == [[store.objects.path_of(oids[1])]]
    assert _names(store) == sorted(store.objects.path_of(o) for o in oids)


def test_each_object_is_stored_as_put_file_stores_it(tmp_path: Path, unnamed: bool) -> None:
    # The codec rule is the store's (zstd where it saves 10%, judged from 64 bytes on, on the
    # first MiB of a streamed file): the batch writer gives every file the codec and content
    # that put_file gives it.
    pattern = b"abcdefgh" * 8
    contents = {
        "63": pattern[:63],  # too short to judge: raw
        "64": pattern,  # just long enough: compressible, zstd
        "random": os.urandom(5000),
        "text": b"hello world\n" * 500,
        # over 1 MiB, streamed: judged on its first MiB (random: raw) though the rest packs
        "streamed": os.urandom(MIB) + bytes(MIB // 2),
    }
    paths = _write(tmp_path / "in", contents)
    one = Store.init(tmp_path / "one")
    many = Store.init(tmp_path / "many")
    oids = batch.put_files(many.objects, paths)
    assert oids == [one.objects.put_file(p) for p in paths]
    for name, oid in zip(contents, oids, strict=True):
        codec = one.objects.path_of(oid).read_bytes()[0]
        assert many.objects.path_of(oid).read_bytes()[0] == codec, name
        assert many.objects.get_bytes(oid) == contents[name]
        many.objects.verify(oid)


def test_no_descriptor_is_left_open(store: Store, tmp_path: Path, unnamed: bool) -> None:
    paths = _write(
        tmp_path / "in",
        {"a": b"a" * 100, "dup": b"a" * 100, "b": os.urandom(3000), "big": os.urandom(MIB + 9)},
    )
    before = _open_fds()
    oids = batch.put_files(store.objects, paths)
    assert batch.put_files(store.objects, paths) == oids  # all stored already
    with pytest.raises(FileNotFoundError):
        batch.put_files(store.objects, [*paths, str(tmp_path / "gone")])
    assert _open_fds() == before
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_storing_again_counts_as_just_written(store: Store, tmp_path: Path, unnamed: bool) -> None:
    # gc's grace period looks at an object's mtime: one stored again (in another batch, or
    # twice in one) is as young as a new one.
    paths = _write(tmp_path / "in", {"a": b"same" * 50, "b": b"other" * 50})
    oids = batch.put_files(store.objects, paths)
    old = time.time() - 3 * 86400
    for oid in oids:
        os.utime(store.objects.path_of(oid), (old, old))
    twice = [paths[0], paths[0], paths[1]]
    assert batch.put_files(store.objects, twice) == [oids[0], *oids]
    for oid in oids:
        assert store.objects.path_of(oid).stat().st_mtime > time.time() - 600
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_an_object_named_by_another_writer_after_the_check_counts_as_just_written(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Named temp files: the object was missing when checked, then another writer named it
    # before this one's link: the link fails, and the object found is touched (gc's grace
    # period) like any object found stored.
    monkeypatch.setattr(
        batch, "open_unnamed", lambda dir, mode=0o444, umask=None, direct=False: None
    )
    paths = _write(tmp_path / "in", {"a": b"raced" * 50})
    (oid,) = batch.put_files(store.objects, paths)
    old = time.time() - 3 * 86400
    os.utime(store.objects.path_of(oid), (old, old))
    real_touch = store.objects.touch
    calls: list[bool] = []

    def touch(o: str) -> bool:  # the first check says missing: the race, lost
        found = real_touch(o) if calls else False
        calls.append(found)
        return found

    monkeypatch.setattr(store.objects, "touch", touch)
    assert batch.put_files(store.objects, paths) == [oid]
    assert calls == [False, True]
    assert store.objects.path_of(oid).stat().st_mtime > time.time() - 600
    assert store.objects.get_bytes(oid) == b"raced" * 50
    assert list(store.objects.tmp_dir.iterdir()) == []


def test_the_barrier_is_told_the_bytes_the_batch_wrote(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sync_files weighs the batch's own bytes against the machine's unwritten data (syncfs,
    # or an fdatasync of each file): the count is every temp file's size, codec byte included.
    from ledger.store import durable

    seen: list[int] = []
    monkeypatch.setattr(batch, "others_dirty", lambda written: False)
    monkeypatch.setattr(durable, "others_dirty", lambda written: seen.append(written) or False)
    paths = _write(
        tmp_path / "in", {"a": os.urandom(3000), "b": b"z" * 50_000, "c": b"", "d": b"q" * 7}
    )
    oids = batch.put_files(store.objects, paths)
    on_disk = sum(store.objects.path_of(o).stat().st_size for o in oids)
    assert seen[0] == on_disk


# A child that may write at most 200 kB to any file (RLIMIT_FSIZE; SIGXFSZ ignored, so a write
# past it fails with EFBIG): the temp file of a 300 kB input fails midway.
_FSIZE_CHILD = """
import errno, resource, signal, sys
from ledger.store import Store, batch
if sys.argv[3] == "named":
    batch.open_unnamed = lambda dir, mode=0o444, umask=None, direct=False: None
store = Store.open(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
try:
    batch.put_files(store.objects, sys.argv[2].split(","))
except OSError as e:
    print(errno.errorcode[e.errno])
else:
    print("stored")
"""


@pytest.mark.parametrize("mode", ["unnamed", "named"])
def test_a_write_that_fails_midway_publishes_nothing(
    store: Store, tmp_path: Path, mode: str
) -> None:
    big = os.urandom(300_000)  # incompressible: its temp file passes the limit
    paths = _write(tmp_path / "in", {"small": b"fits " * 100, "big": big})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _FSIZE_CHILD, str(store.root), ",".join(paths), mode],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.stdout.strip() == "EFBIG", done.stderr
    assert not store.objects.has(hash_bytes(big))
    assert _names(store) == []  # the batch failed: none of it was published
    assert list(store.objects.tmp_dir.iterdir()) == []


# A child allowed 66 open files: a batch holds one descriptor per file until it is published,
# so a batch must be smaller than the limit less what the process holds besides.
_NOFILE_CHILD = """
import resource, sys
from pathlib import Path
from ledger.store import Store, batch
store = Store.open(sys.argv[1])
paths = sorted(str(p) for p in Path(sys.argv[2]).iterdir())
resource.setrlimit(resource.RLIMIT_NOFILE, (66, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print(len(batch.put_files(store.objects, paths)))
"""


def test_a_low_limit_on_open_files_is_respected(store: Store, tmp_path: Path) -> None:
    _write(tmp_path / "in", {f"{i:03d}": f"file {i}\n".encode() * 20 for i in range(300)})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _NOFILE_CHILD, str(store.root), str(tmp_path / "in")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "300"
    assert len(_names(store)) == 300


def _saving_exactly_ten_percent() -> bytes | None:
    """Bytes whose zstd form (the store's level) is exactly 90% of them, or None."""
    import random

    import zstandard

    from ledger.store.objects import MIN_SAVING, ZSTD_LEVEL

    zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    for size in range(100, 3000, 10):
        target = size * (1 - MIN_SAVING)
        noise = random.Random(size).randbytes(size)
        for k in range(int(target) - 40, int(target) + 5):
            data = noise[:k] + bytes(size - k)
            if len(zstd.compress(data)) == target:
                return data
    return None


def test_a_saving_of_exactly_ten_percent_is_compressed(tmp_path: Path) -> None:
    # "zstd where it saves at least 10%": the bound itself counts, for put_file and for the
    # batch writer alike.
    from ledger.store.objects import CODEC_ZSTD

    data = _saving_exactly_ten_percent()
    if data is None:
        pytest.skip("this zstd gives no input a saving of exactly 10%")
    (path,) = _write(tmp_path / "in", {"edge": data})
    one = Store.init(tmp_path / "one")
    many = Store.init(tmp_path / "many")
    oid = one.objects.put_file(path)
    assert batch.put_files(many.objects, [path]) == [oid]
    assert one.objects.path_of(oid).read_bytes()[0] == CODEC_ZSTD
    assert many.objects.path_of(oid).read_bytes()[0] == CODEC_ZSTD
    assert many.objects.get_bytes(oid) == data


def _distinct_fans(root: Path, n: int) -> list[str]:
    """``n`` small files whose objects go to ``n`` different fan folders."""
    contents: dict[str, bytes] = {}
    fans: set[str] = set()
    i = 0
    while len(contents) < n:
        data = b"file %d\n" % i * 20
        fan = hash_bytes(data)[3:5]
        if fan not in fans:
            fans.add(fan)
            contents[f"f{i}"] = data
        i += 1
    return _write(root, contents)


def test_each_folder_that_got_a_name_is_made_durable_once_per_call(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a busy machine (no syncfs) each folder that got a name is fsynced once, after the last
    # batch is named, not once per batch; when a later batch fails, the names the earlier ones
    # gave are made durable all the same (another writer may already have found and linked them).
    from ledger.store import durable

    monkeypatch.setattr(durable, "_DIRTY_SLACK", -(1 << 62))  # busy: fsyncs, no syncfs
    monkeypatch.setattr(batch, "_batch_size", lambda: 2)
    synced: list[tuple[Path, int]] = []
    monkeypatch.setattr(durable, "fsync_dir", lambda d: synced.append((d, len(_names(store)))))
    paths = _distinct_fans(tmp_path / "in", 6)
    b3 = store.objects.root / "b3"

    oids = batch.put_files(store.objects, paths[:4])  # two batches
    fans = {store.objects.path_of(o).parent for o in oids}
    dirs = [d for d, _ in synced]
    assert len(dirs) == len(set(dirs))
    assert {d for d in dirs if d.parent == b3} == fans
    assert set(dirs) == fans | {b3, store.objects.root}  # b3/ and its folder got new entries
    assert {named for _, named in synced} == {4}

    synced.clear()
    with pytest.raises(FileNotFoundError):
        batch.put_files(store.objects, [*paths[4:], str(tmp_path / "gone"), paths[0]])
    named = {store.objects.path_of(hash_bytes(Path(p).read_bytes())).parent for p in paths[4:]}
    assert {d for d, _ in synced if d.parent == b3} == named


def test_a_batch_s_syncfs_also_makes_the_names_before_it_durable(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch whose content barrier is one syncfs also commits the names the batches before it
    # gave: at the end only the last batch's folders are left to make durable (here by fsyncs:
    # the machine turned busy after the last batch's barrier).
    from ledger.store import durable

    if not durable.sync_filesystem(store.objects.tmp_dir):
        pytest.skip("the store's file system is not one syncfs is trusted on")
    monkeypatch.setattr(batch, "others_dirty", lambda written: False)
    monkeypatch.setattr(durable, "others_dirty", lambda written: written == 0)
    monkeypatch.setattr(batch, "_batch_size", lambda: 2)
    synced: list[Path] = []
    monkeypatch.setattr(durable, "fsync_dir", synced.append)
    oids = batch.put_files(store.objects, _distinct_fans(tmp_path / "in", 4))
    last = {store.objects.path_of(o).parent for o in oids[2:]}
    b3 = store.objects.root / "b3"
    assert {d for d in synced if d.parent == b3} == last
    assert len(synced) == len(set(synced))


@pytest.mark.parametrize("size", [1, 2])
def test_an_fdatasync_barrier_leaves_every_batch_s_folders_to_the_end(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    # Where syncfs is not trusted, a batch's barrier fdatasyncs its own files (from this thread
    # for one, from a pool for more) and commits no name: the folders of every batch are still
    # fsynced at the end, also after a last batch of one streamed file (nothing to fdatasync).
    from ledger.store import durable

    monkeypatch.setattr(durable, "_SYNCFS_SAFE", {})
    monkeypatch.setattr(durable, "_DIRTY_SLACK", 1 << 62)  # quiet: one barrier per batch
    monkeypatch.setattr(batch, "_batch_size", lambda: size)
    synced: list[Path] = []
    monkeypatch.setattr(durable, "fsync_dir", synced.append)
    paths = _distinct_fans(tmp_path / "in", 4)
    oids = batch.put_files(
        store.objects, [*paths, *_write(tmp_path / "big", {"big": os.urandom(MIB + 1)})]
    )
    fans = {store.objects.path_of(o).parent for o in oids[:4]}
    assert {d for d in synced if d.parent == store.objects.root / "b3"} == fans


# A child whose descriptor table is fresh: put_files grows it once, to hold the batch's temp
# files and the workers' own descriptors, within the limit on open files.
_TABLE_CHILD = """
import os, resource, sys
from ledger.store import batch

def table() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("FDSize:"):
            return int(line.split()[1])
    raise SystemExit("no FDSize")

soft = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
before, fds = table(), sorted(os.listdir("/proc/self/fd"))
batch._room_for_descriptors(int(sys.argv[2]))
print(before, table(), sorted(os.listdir("/proc/self/fd")) == fds)
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads FDSize in /proc")
# (limit on open files, room asked for, least and most slots after: the kernel doubles the
# table, so 1000 descriptors more take 1024 slots, and a limit of 257 takes all 257, in 512)
@pytest.mark.parametrize(
    ("soft", "n", "least", "most"),
    [(4096, 1000, 1001, 1024), (300, 1000, 300, 512), (257, 1000, 257, 512)],
)
def test_the_descriptor_table_is_grown_once_within_the_limit(
    tmp_path: Path, soft: int, n: int, least: int, most: int
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _TABLE_CHILD, str(soft), str(n)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    before, after, same = done.stdout.split()
    assert int(before) < least <= int(after) <= most, done.stdout
    assert same == "True"  # the descriptor it opened, and the one it placed high, are closed


def test_content_is_judged_on_its_head_first(tmp_path: Path) -> None:
    # Content longer than 4 KiB whose first 4 KiB zstd does not shrink by 10% is stored raw
    # without compressing the rest, though the rest would pack; one whose head packs is judged
    # whole, as before. put_bytes, put_file and the batch writer agree.
    from ledger.store.objects import CODEC_RAW, CODEC_RAW_ALIGNED, CODEC_ZSTD, HEAD

    rng = __import__("random").Random(11)
    contents = {
        "random_head": rng.randbytes(2 * HEAD) + bytes(8 * HEAD),  # would save ~80% whole
        "zero_head": bytes(2 * HEAD) + rng.randbytes(8 * HEAD),  # ~20% whole: zstd
        "head_only_packs": bytes(HEAD) + rng.randbytes(40 * HEAD),  # ~2% whole: raw
        "short_random_then_zeros": rng.randbytes(HEAD // 2) + bytes(HEAD // 2),  # <= HEAD
        "long_stream": rng.randbytes(HEAD) + bytes(2 * MIB),  # streamed: judged on its head
    }
    want = {
        "random_head": CODEC_RAW,
        "zero_head": CODEC_ZSTD,
        "head_only_packs": CODEC_RAW_ALIGNED,  # raw, 164 KiB: from offset 4096
        "short_random_then_zeros": CODEC_ZSTD,
        "long_stream": CODEC_RAW_ALIGNED,
    }
    paths = _write(tmp_path / "in", contents)
    one = Store.init(tmp_path / "one")
    many = Store.init(tmp_path / "many")
    direct = Store.init(tmp_path / "bytes")
    oids = batch.put_files(many.objects, paths)
    assert oids == [one.objects.put_file(p) for p in paths]
    assert oids == [direct.objects.put_bytes(d) for d in contents.values()]
    for name, oid in zip(contents, oids, strict=True):
        for st in (one, many, direct):
            assert st.objects.path_of(oid).read_bytes()[0] == want[name], (name, st.root)
            assert st.objects.get_bytes(oid) == contents[name]
