"""The stat cache: hits skip reads, racy entries are refused, bad files are ignored, and two
processes writing it at once leave a valid file."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import blake3
import pytest

from ledger.capture import statcache
from ledger.capture.data import digest_input, manifest_data
from ledger.capture.statcache import CACHE_NAME, StatCache
from ledger.store import Store

REPO = Path(__file__).resolve().parents[2]


def dataset(root: Path, n: int = 20) -> None:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"{i:03d}.bin").write_bytes(os.urandom(100 + i))


def test_hit_avoids_rereading_across_processes(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root)
    path = tmp_path / "cache" / CACHE_NAME
    first = StatCache.load(path, racy_window_ns=0)
    d1 = digest_input(root, first)
    assert (first.stats.hashed, first.stats.hits) == (20, 0)
    first.save()
    second = StatCache.load(path, racy_window_ns=0)  # as a new process would
    assert len(second) == 20
    d2 = digest_input(root, second)
    assert (second.stats.hashed, second.stats.bytes_hashed, second.stats.hits) == (0, 0, 20)
    assert d2.digest == d1.digest and d2.files == d1.files
    # A touched file is read again, and only that one.
    (root / "005.bin").write_bytes(b"new content")
    d3 = digest_input(root, second)
    assert second.stats.hashed == 1 and d3.digest != d1.digest


def test_the_counters_add_up_over_the_inputs_digested_with_one_cache(tmp_path: Path) -> None:
    """A recorder digests every --input with one cache: what it read, missed and reused is
    counted across them, not for the last input alone."""
    a, b = tmp_path / "a", tmp_path / "b"
    dataset(a, 3)
    dataset(b, 5)
    distrusting = StatCache(racy_window_ns=10**18)  # every stat too recent to trust: none kept
    digest_input(a, distrusting, dvc=False)
    digest_input(b, distrusting, dvc=False)
    counts = distrusting.stats
    assert (counts.misses, counts.hashed, counts.racy) == (8, 8, 8)
    assert counts.bytes_hashed == sum(100 + i for i in range(3)) + sum(100 + i for i in range(5))
    trusting = StatCache(racy_window_ns=0)
    for root in (a, b, a, b):  # cold, cold, then each from its tree memo
        digest_input(root, trusting, dvc=False)
    assert (trusting.stats.tree_hits, trusting.stats.hits, trusting.stats.hashed) == (2, 8, 8)


def test_every_file_counts_as_a_miss_in_an_empty_cache_and_a_hit_in_a_full_one(
    tmp_path: Path,
) -> None:
    """An empty cache is not looked up file by file; its misses are counted all the same."""
    root = tmp_path / "ds"
    dataset(root, 4)
    cache = StatCache(racy_window_ns=0)
    digest_input(root, cache)
    assert (cache.stats.misses, cache.stats.hits, cache.stats.hashed) == (4, 0, 4)
    cache.trees.clear()  # no tree memo: each file is looked up
    digest_input(root, cache)
    assert (cache.stats.misses, cache.stats.hits, cache.stats.hashed) == (4, 4, 4)


def test_in_process_re_digest_skips_per_file_work(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root)
    cache = StatCache(racy_window_ns=0)
    d1 = digest_input(root, cache)
    assert root.as_posix() in cache.trees
    d2 = digest_input(root, cache)
    assert cache.stats.hashed == 20 and d2.digest == d1.digest and manifest_data(d2) is not None


def test_fresh_files_are_not_trusted(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root, 3)
    cache = StatCache(tmp_path / "sc")  # default 2 s window: these files are seconds old
    digest_input(root, cache)
    assert (cache.stats.racy, len(cache), cache.trees) == (3, 0, {})
    digest_input(root, cache)
    assert cache.stats.hashed == 6
    cache.save()
    assert not (tmp_path / "sc").exists()  # nothing worth writing


def test_racy_rule_uses_the_start_of_the_read(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    st = f.stat()
    cache = StatCache()
    newest = max(st.st_mtime_ns, st.st_ctime_ns)
    assert not cache.remember(str(f), st, "b3:" + "0" * 64, newest + 1_999_999_999)
    assert cache.remember(str(f), st, "b3:" + "0" * 64, newest + 2_000_000_000)
    assert cache.lookup(str(f), st) == "b3:" + "0" * 64


def test_a_loaded_cache_answers_a_lookup_first_thing(tmp_path: Path) -> None:
    # A new `ledger record` loads the file and looks a file up before anything else touches
    # the records (they are decoded on first use).
    f = tmp_path / "f"
    f.write_bytes(b"x")
    st = f.stat()
    cache = StatCache(tmp_path / "sc")
    assert cache.remember(str(f), st, "b3:" + "1" * 64, time.time_ns() + 10**10)
    cache.save()
    again = StatCache.load(tmp_path / "sc")
    assert again.lookup(str(f), st) == "b3:" + "1" * 64
    assert (again.stats.hits, again.stats.misses) == (1, 0)


def test_the_file_has_the_documented_header_and_another_version_is_ignored(
    tmp_path: Path,
) -> None:
    # docs/reference/data-digests.md: magic LGSTATC\0, u32 version 2, u32 entries, u32 trees.
    f = tmp_path / "f"
    f.write_bytes(b"x")
    st = f.stat()
    cache = StatCache(tmp_path / "sc")
    cache.remember(str(f), st, "b3:" + "1" * 64, time.time_ns() + 10**10)
    cache.save()
    data = (tmp_path / "sc").read_bytes()
    assert struct.unpack_from("<8sIII", data) == (b"LGSTATC\x00", 2, 1, 0)
    # A cache of another version (a newer ledger's, its trailer right) is not misread: it is
    # an empty one.
    body = data[:8] + struct.pack("<I", 3) + data[12:-32]
    (tmp_path / "sc").write_bytes(body + blake3.blake3(body).digest())
    assert StatCache.load(tmp_path / "sc").lookup(str(f), st) is None


def test_corrupt_or_foreign_cache_files_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root, 5)
    path = tmp_path / CACHE_NAME
    good = StatCache(path, racy_window_ns=0)
    digest_input(root, good)
    good.save()
    data = path.read_bytes()
    assert len(StatCache.load(path)) == 5
    flipped = bytearray(data)
    flipped[40] ^= 1
    variants = {
        "bit flip": bytes(flipped),
        "truncated": data[:-7],
        "empty": b"",
        "foreign": b"SQLite format 3\x00" + data[16:],
        "newer version": data[:8] + (99).to_bytes(4, "little") + data[12:],
    }
    for name, content in variants.items():
        path.write_bytes(content)
        cache = StatCache.load(path, racy_window_ns=0)
        assert len(cache) == 0, name
        digest_input(root, cache)  # rebuilt from the files
        assert cache.stats.hashed == 5, name
        cache.save()
        assert len(StatCache.load(path)) == 5, name


def test_for_store_lives_in_ledger_cache(tmp_path: Path, store: Store) -> None:
    cache = StatCache.for_store(store, racy_window_ns=0)
    dataset(tmp_path / "ds", 2)
    digest_input(tmp_path / "ds", cache)
    cache.save()
    assert (store.root / "cache" / CACHE_NAME).is_file()


def test_save_merges_what_another_process_saved(tmp_path: Path) -> None:
    path = tmp_path / CACHE_NAME
    dataset(tmp_path / "a", 3)
    dataset(tmp_path / "b", 4)
    one = StatCache.load(path, racy_window_ns=0)
    two = StatCache.load(path, racy_window_ns=0)
    digest_input(tmp_path / "a", one)
    digest_input(tmp_path / "b", two)
    one.save()
    two.save()
    assert len(StatCache.load(path)) == 7


WRITER = """
import os, sys
from pathlib import Path
from ledger.capture.statcache import StatCache
path, tag, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
st = os.stat(sys.argv[1] + ".probe")
for r in range(rounds):
    cache = StatCache.load(path, racy_window_ns=0)
    for i in range(300):
        cache.remember(f"/{tag}/{r}/{i}", st, "b3:" + f"{r:064x}", 2**62)
    cache.save()
"""


def test_two_processes_writing_at_once_never_corrupt_it(tmp_path: Path) -> None:
    path = tmp_path / CACHE_NAME
    Path(str(path) + ".probe").write_bytes(b"")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, "25"], env=env)
        for tag in ("p1", "p2")
    ]
    seen = 0
    try:
        while any(p.poll() is None for p in procs):
            if path.exists():
                assert statcache._read(path) is not None, "a reader saw a partial cache file"
                seen += 1
            time.sleep(0.002)
        assert [p.wait(timeout=60) for p in procs] == [0, 0]
    finally:
        # A failed assertion must not leave the writers running (their ResourceWarning would
        # fail whichever test runs next).
        for p in procs:
            p.kill()
            p.wait()
    final = StatCache.load(path)
    keys = set(final._entries)
    # Last writer wins: that writer's final round is complete; nothing is half-written.
    assert any({f"/{t}/24/{i}" for i in range(300)} <= keys for t in ("p1", "p2"))
    assert len(keys) % 300 == 0 and seen > 0


# A cache file is written by ledger, but read from a folder anyone may write to: a file whose
# trailer is right and whose fields are not is refused whole, never read in part.
_HEAD, _REC_SIZE, _TREE_SIZE = 20, 72, 132


def _memo(tag: int, n: int) -> statcache.TreeMemo:
    return statcache.TreeMemo(
        signature=bytes([tag]) * 32,
        dir_digest="b3:" + f"{tag:02x}" * 32,
        files="b3:" + f"{tag + 1:02x}" * 32,
        n_files=n,
        n_bytes=10 * n,
        digests=bytes(range(tag, tag + 32)) * n,
    )


def _saved(tmp_path: Path, memos: dict[str, statcache.TreeMemo]) -> tuple[Path, bytes]:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    cache = StatCache(tmp_path / "sc")
    cache.remember(str(f), f.stat(), "b3:" + "1" * 64, time.time_ns() + 10**10)
    for name, memo in memos.items():
        (tmp_path / name).mkdir()
        cache.remember_tree(str(tmp_path / name), memo)
    cache.save()
    return tmp_path / "sc", (tmp_path / "sc").read_bytes()[:-32]


def _reseal(path: Path, body: bytes) -> StatCache:
    path.write_bytes(body + blake3.blake3(body).digest())
    return StatCache.load(path)


@pytest.mark.parametrize("names", [("a", "b", "empty"), ("empty",)])
def test_tree_memos_come_back_exactly(tmp_path: Path, names: tuple[str, ...]) -> None:
    # ("empty",): an empty folder's memo has no digests, so its name ends the file's blob
    memos = {n: _memo(9, 0) if n == "empty" else _memo(len(n) * 5, 3) for n in names}
    path, _ = _saved(tmp_path, memos)
    loaded = StatCache.load(path)
    assert {Path(k).name: v for k, v in loaded.trees.items()} == memos


@pytest.mark.parametrize(
    "damage",
    [
        "magic before",
        "magic after",
        "version 1",
        "trailer low",
        "trailer high",
        "record path past the blob",
        "tree name past the blob",
        "tree digests past the blob",
    ],
)
def test_a_resealed_file_with_a_bad_field_is_refused_whole(tmp_path: Path, damage: str) -> None:
    path, body = _saved(tmp_path, {"a": _memo(1, 3)})
    b = bytearray(body)
    blob = len(b) - (_HEAD + _REC_SIZE + _TREE_SIZE)
    rec, tree = _HEAD, _HEAD + _REC_SIZE
    if damage == "magic before":
        b[:8] = b"LGSTATB\x00"
    elif damage == "magic after":
        b[:8] = b"LGSTATD\x00"
    elif damage == "version 1":
        b[8:12] = struct.pack("<I", 1)
    elif damage == "record path past the blob":  # offset (u32 at 32) + length > blob
        b[rec + 32 : rec + 36] = struct.pack("<I", blob)
    elif damage == "tree name past the blob":
        b[tree : tree + 4] = struct.pack("<I", blob)
    elif damage == "tree digests past the blob":  # data offset (u64 at 120), 3 entries
        b[tree + 120 : tree + 128] = struct.pack("<Q", blob - 64)
    if damage.startswith("trailer"):
        path.write_bytes(bytes(b) + (b"\x00" if damage == "trailer low" else b"\xff") * 32)
        cache = StatCache.load(path)
    else:
        cache = _reseal(path, bytes(b))
    # (the per-file records are decoded on first use: a bad one drops them all, not the
    # tree memos, which were checked when the file was read)
    assert cache.lookup(str(tmp_path / "f"), (tmp_path / "f").stat()) is None
    assert len(cache) == 0
    assert len(cache.trees) == (1 if damage == "record path past the blob" else 0)


def test_each_lookup_that_misses_counts_one_miss(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    cache = StatCache()
    assert cache.lookup(str(f), f.stat()) is None
    assert cache.lookup(str(f), f.stat()) is None
    assert (cache.stats.hits, cache.stats.misses) == (0, 2)


def test_a_save_with_nothing_new_leaves_the_file_alone(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path, {})
    cache = StatCache.load(path)
    cache.remember_tree(str(tmp_path), _memo(3, 1))
    cache.save()
    before = path.stat()
    cache.save()  # nothing changed since: not written again
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_cache_file_in_folders_not_made_yet(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    cache = StatCache(tmp_path / "new" / "deeper" / "sc")
    cache.remember(str(f), f.stat(), "b3:" + "1" * 64, time.time_ns() + 10**10)
    cache.save()
    assert StatCache.load(tmp_path / "new" / "deeper" / "sc").lookup(str(f), f.stat())


@pytest.mark.parametrize("tag", [2, 200])  # the new memo's fields sort before, then after
def test_a_changed_tree_memo_is_saved(tmp_path: Path, tag: int) -> None:
    path, _ = _saved(tmp_path, {"a": _memo(100, 2)})
    cache = StatCache.load(path)
    cache.remember_tree(str(tmp_path / "a"), _memo(tag, 2))
    cache.save()
    assert StatCache.load(path).trees[str(tmp_path / "a")] == _memo(tag, 2)


def test_two_processes_keep_each_others_tree_memos(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path, {})
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    first, second = StatCache.load(path), StatCache.load(path)
    first.remember_tree(str(tmp_path / "x"), _memo(1, 1))
    first.save()
    second.remember_tree(str(tmp_path / "y"), _memo(2, 1))
    second.save()  # merged with what the first saved meanwhile
    trees = StatCache.load(path).trees
    assert trees == {str(tmp_path / "x"): _memo(1, 1), str(tmp_path / "y"): _memo(2, 1)}
