"""The tree memo: a directory input whose walk has the same stats reuses its last digest, across
processes; any stat change inside it (an edit, a rename, a same-size edit with the mtime put
back) falls back to per-file work, and the changed file is read again."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import blake3
import pytest

from ledger._canonical import canonical_json
from ledger._hashing import hash_bytes
from ledger.capture import statcache
from ledger.capture.data import _fill, _walk, digest_input, manifest_data, recheck, store_inputs
from ledger.capture.statcache import CACHE_NAME, StatCache
from ledger.records.data import DataManifest
from ledger.store import Store

REPO = Path(__file__).resolve().parents[2]


def dataset(root: Path) -> None:
    (root / "a" / "deep").mkdir(parents=True)
    (root / "empty").mkdir()
    for i in range(6):
        (root / "a" / f"{i}.bin").write_bytes(os.urandom(64))
    (root / "a" / "deep" / "x.txt").write_bytes(b"x" * 10)
    (root / "top.txt").write_bytes(b"top")
    os.symlink("top.txt", root / "link")


def cold_then_saved(tmp_path: Path) -> tuple[Path, Path, str]:
    """A dataset digested once and its cache saved; returns (root, cache path, digest)."""
    root = tmp_path / "ds"
    dataset(root)
    path = tmp_path / CACHE_NAME
    cache = StatCache.load(path, racy_window_ns=0)
    d = digest_input(root, cache)
    cache.save()
    # Later edits must land in a later clock tick than the digest, or no stat could show them.
    time.sleep(0.05)
    return root, path, d.digest


def test_memo_survives_a_new_process_and_gives_the_same_record(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    fresh = digest_input(root, StatCache())  # no cache at all: every byte read
    warm_cache = StatCache.load(path, racy_window_ns=0)
    warm = digest_input(root, warm_cache)
    assert warm_cache.stats.tree_hits == 1 and warm_cache.stats.hashed == 0
    assert warm_cache._parsed is None  # the per-file records were never decoded
    assert (warm.digest, warm.files, warm.n_files, warm.n_bytes) == (
        fresh.digest,
        fresh.files,
        fresh.n_files,
        fresh.n_bytes,
    )
    assert warm._manifest is None  # deferred: a warm digest builds no listing
    built = manifest_data(warm)
    assert built is not None and built == manifest_data(fresh)
    assert hash_bytes(canonical_json(built)) == warm.files
    assert DataManifest.model_validate(built).dir_digest == digest


def test_a_digest_made_from_the_stat_cache_alone_keeps_a_tree_memo(tmp_path: Path) -> None:
    """The memo lost (another cache file, a pruned one) but every file's stat still vouches:
    nothing is read, and the result is memoised again for the next digest."""
    root = tmp_path / "ds"
    dataset(root)
    cache = StatCache(racy_window_ns=0)
    first = digest_input(root, cache, dvc=False)
    cache.trees.clear()
    again = digest_input(root, cache, dvc=False)
    assert cache.stats.hashed == 8 and again.digest == first.digest  # the first digest's reads
    assert str(root) in cache.trees
    digest_input(root, cache, dvc=False)
    assert cache.stats.tree_hits == 1


def test_same_process_hit_reads_nothing_and_keeps_the_manifest(tmp_path: Path) -> None:
    root, path, _ = cold_then_saved(tmp_path)
    cache = StatCache.load(path, racy_window_ns=0)
    first = digest_input(root, cache)
    built = manifest_data(first)
    second = digest_input(root, cache)
    assert cache.stats.tree_hits == 2 and cache.stats.hashed == 0
    assert second._manifest is built and manifest_data(second) is built  # built once


def test_a_deferred_listing_is_stored_by_store_inputs(tmp_path: Path) -> None:
    root, path, _ = cold_then_saved(tmp_path)
    d = digest_input(root, StatCache.load(path, racy_window_ns=0))  # the cache is dropped
    assert d._manifest is None
    store = Store.init(tmp_path / ".ledger")
    report = store_inputs([d], store)
    assert report.stored == 9 and report.changed == []  # 8 files and the symlink target
    assert d.files is not None and store.objects.has(d.files)


def test_every_warm_directory_keeps_its_listing_however_many_a_run_has(tmp_path: Path) -> None:
    """A run with many directory inputs, each a stat-cache hit: each one's listing is built
    when the recorder stores it into a ledger that lacks it (a warm digest builds none at
    first). A bounded table of the walks not built yet once dropped the oldest beyond 64,
    and the record failed with "no file listing for input"."""
    from ledger.capture.data import store_manifests

    roots = []
    for i in range(70):
        root = tmp_path / "inputs" / f"d{i:02d}"
        (root / "sub").mkdir(parents=True)
        (root / "sub" / "x.bin").write_bytes(b"%d" % i)
        (root / "y.txt").write_text(f"input {i}\n")
        roots.append(root)
    path = tmp_path / CACHE_NAME
    cache = StatCache.load(path, racy_window_ns=0)
    cold = [digest_input(root, cache, dvc=False) for root in roots]
    cache.save()
    cache = StatCache.load(path, racy_window_ns=0)
    warm = [digest_input(root, cache, dvc=False) for root in roots]
    assert cache.stats.tree_hits == 70 and cache.stats.hashed == 0
    assert all(d._manifest is None for d in warm)
    store = Store.init(tmp_path / ".ledger")  # a ledger without any of the listings
    store_manifests(warm, store)
    for c, w in zip(cold, warm, strict=True):
        assert w.files == c.files and store.objects.has(w.files)
        assert store.get_json(w.files) == manifest_data(c)


def warm(path: Path, root: Path) -> tuple[StatCache, str]:
    cache = StatCache.load(path, racy_window_ns=0)
    return cache, digest_input(root, cache).digest


def test_a_changed_file_inside_a_cached_directory_is_read_again(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    (root / "a" / "deep" / "x.txt").write_bytes(b"y" * 11)
    cache, after = warm(path, root)
    assert cache.stats.tree_hits == 0
    assert (cache.stats.hashed, cache.stats.bytes_hashed) == (1, 11)  # only that file
    assert after != digest
    assert after == digest_input(root, StatCache()).digest


def test_a_renamed_file_is_seen(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    os.rename(root / "a" / "3.bin", root / "a" / "3-renamed.bin")
    cache, after = warm(path, root)
    assert cache.stats.tree_hits == 0 and after != digest
    assert after == digest_input(root, StatCache()).digest


def test_two_same_size_files_swapping_names_are_seen(tmp_path: Path) -> None:
    """The same names, sizes and times as before: only the inodes moved between names."""
    root, path, digest = cold_then_saved(tmp_path)
    a, b, t = root / "a" / "1.bin", root / "a" / "2.bin", root / "a" / "swap"
    os.rename(a, t)
    os.rename(b, a)
    os.rename(t, b)
    cache, after = warm(path, root)
    assert cache.stats.tree_hits == 0 and cache.stats.hashed == 2
    assert after != digest and after == digest_input(root, StatCache()).digest


def test_same_size_edit_with_the_mtime_put_back_is_seen_through_ctime(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    f = root / "a" / "4.bin"
    before = f.stat()
    with open(f, "r+b") as fh:  # same inode, same size
        fh.write(b"\x00" * 64)
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime back as it was
    now = f.stat()
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert now.st_ctime_ns != before.st_ctime_ns  # the precondition this test is about
    cache, after = warm(path, root)
    assert cache.stats.tree_hits == 0 and cache.stats.hashed == 1
    assert after != digest and after == digest_input(root, StatCache()).digest


def test_a_retargeted_symlink_and_a_new_empty_dir_are_seen(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    (root / "link").unlink()
    os.symlink("a/0.bin", root / "link")
    cache, after = warm(path, root)
    assert cache.stats.tree_hits == 0 and after != digest
    (root / "empty" / "inner").mkdir()
    _, again = warm(path, root)
    assert again not in (digest, after)


def test_recheck_after_a_memo_hit_names_the_change(tmp_path: Path) -> None:
    root, path, _ = cold_then_saved(tmp_path)
    cache = StatCache.load(path, racy_window_ns=0)
    before = digest_input(root, cache)
    assert cache.stats.tree_hits == 1
    (root / "top.txt").write_bytes(b"TOP!")
    change = recheck(before, cache)
    assert change is not None and change.modified == ["top.txt"]


def test_the_walk_signature_is_the_documented_one(tmp_path: Path) -> None:
    """docs/reference/data-digests.md: BLAKE3 over each entry's (inode, size, mtime_ns,
    ctime_ns) as little-endian 64-bit integers, times in two's complement, in walk order, then
    the relative paths joined by NUL. A time before 1970 and an empty directory included."""
    root = tmp_path / "ds"
    dataset(root)
    os.utime(root / "a" / "0.bin", ns=(-5_000_000_123, -7_000_000_456))
    items, signature = _walk(str(root), str(root) + "/")
    assert {t for _, _, t in items} == {"file", "dir", "symlink"}
    assert min(st.st_mtime_ns for _, st, _ in items) == -7_000_000_456
    h = blake3.blake3()
    for _, st, type in items:
        size = 0 if type == "dir" else st.st_size
        h.update(struct.pack("<QQ", st.st_ino, size))
        h.update(struct.pack("<qq", st.st_mtime_ns, st.st_ctime_ns))
    h.update("\x00".join(rel for rel, _, _ in items).encode())
    assert signature == h.digest()


def test_a_file_changed_between_walk_and_read_is_not_memoised(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root)
    base = str(root) + "/"
    items, _ = _walk(str(root), base)
    time.sleep(0.05)
    (root / "top.txt").write_bytes(b"changed after the walk")
    cache = StatCache(racy_window_ns=0)
    digests, as_walked = _fill(items, base, cache, 1)
    assert not as_walked
    # The listing describes what was read: the new size goes with the new digest.
    (entry,) = [i for i in items if i[0] == "top.txt"]
    assert entry[1].st_size == len(b"changed after the walk")
    assert digests[items.index(entry)] == hash_bytes(b"changed after the walk")


def test_racy_digests_leave_no_memo(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root)
    cache = StatCache(tmp_path / "sc")  # default 2 s window: these files are brand new
    digest_input(root, cache)
    assert cache.trees == {}


def test_memo_of_a_removed_input_is_dropped_on_save(tmp_path: Path) -> None:
    root, path, _ = cold_then_saved(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "f").write_bytes(b"f")
    cache = StatCache.load(path, racy_window_ns=0)
    digest_input(other, cache)
    for p in sorted(root.rglob("*"), reverse=True):
        p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
    root.rmdir()
    cache.save()
    assert set(StatCache.load(path).trees) == {str(other)}


def test_pruning_keeps_the_entries_of_used_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path, _ = cold_then_saved(tmp_path)
    stale = StatCache.load(path, racy_window_ns=0)
    st = os.stat(path)
    for i in range(20):
        stale.remember(f"/gone/{i}", st, "b3:" + "0" * 64, 2**62)
    stale.save()
    monkeypatch.setattr(statcache, "MAX_ENTRIES", 10)
    cache = StatCache.load(path, racy_window_ns=0)
    digest_input(root, cache)  # a memo hit: no per-file entry is looked up
    (root / "new.txt").write_bytes(b"n")  # one new file makes the next save write
    digest_input(root, cache)
    cache.save()
    kept = StatCache.load(path)
    assert not any(k.startswith("/gone/") for k in kept._entries)
    assert str(root / "a" / "0.bin") in kept._entries and str(root) in kept.trees


def reseal(data: bytearray) -> bytes:
    body = bytes(data[:-32])
    return body + blake3.blake3(body).digest()


def test_out_of_range_offsets_with_a_valid_trailer_are_not_trusted(tmp_path: Path) -> None:
    _, path, _ = cold_then_saved(tmp_path)
    good = path.read_bytes()
    header = struct.Struct("<8sIII")
    _, _, count, ntrees = header.unpack_from(good)
    assert ntrees == 1
    tree_at = header.size + count * statcache._REC.size
    rec = list(statcache._TREE.unpack_from(good, tree_at))
    rec[7] = 10**9  # the digests offset, beyond the file
    bad = bytearray(good)
    statcache._TREE.pack_into(bad, tree_at, *rec)
    path.write_bytes(reseal(bad))
    assert statcache._read(path) is None
    # A per-file record pointing past the paths: no per-file entry is trusted.
    bad = bytearray(good)
    first = list(statcache._REC.unpack_from(good, header.size))
    first[4] = 10**9
    statcache._REC.pack_into(bad, header.size, *first)
    path.write_bytes(reseal(bad))
    cache = StatCache.load(path, racy_window_ns=0)
    assert len(cache) == 0


def test_a_version_1_cache_file_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dataset(root)
    path = tmp_path / CACHE_NAME
    # A version 1 file (no tree section) that vouches for top.txt with a wrong digest.
    st = (root / "top.txt").stat()
    name = os.fsencode(root / "top.txt")
    v1 = struct.pack("<8sII", b"LGSTATC\x00", 1, 1)
    v1 += statcache._REC.pack(
        st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, 0, len(name), bytes(32)
    )
    v1 += name
    path.write_bytes(v1 + blake3.blake3(v1).digest())
    cache = StatCache.load(path, racy_window_ns=0)
    assert len(cache) == 0
    d = digest_input(root, cache)
    assert cache.stats.hashed == 8  # every regular file, top.txt included
    assert d.digest == digest_input(root, StatCache()).digest


CHILD = """
import sys
from pathlib import Path
from ledger.capture.data import digest_input
from ledger.capture.statcache import StatCache
cache = StatCache.load(Path(sys.argv[1]), racy_window_ns=0)
d = digest_input(Path(sys.argv[2]), cache)
print(cache.stats.tree_hits, cache.stats.hashed, d.digest)
"""


def test_a_separate_process_uses_the_memo(tmp_path: Path) -> None:
    root, path, digest = cold_then_saved(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(root)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["1", "0", digest]
