"""recheck after the run: silent when unchanged, names what was added, removed, modified."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ledger.capture.data import digest_input, recheck, store_inputs
from ledger.capture.statcache import StatCache
from ledger.records.data import InputDigest
from ledger.store import Store


def make(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "keep.txt").write_bytes(b"keep")
    (root / "edit.txt").write_bytes(b"edit")
    (root / "sub" / "gone.txt").write_bytes(b"gone")


def test_unchanged_is_none_and_cheap(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    make(root)
    cache = StatCache(racy_window_ns=0)
    before = digest_input(root, cache)
    hashed = cache.stats.hashed
    assert recheck(before, cache) is None
    assert cache.stats.hashed == hashed  # nothing was read again


def test_modify_add_delete_are_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    make(root)
    cache = StatCache()
    before = digest_input(root, cache)
    (root / "edit.txt").write_bytes(b"EDIT")  # same size, same second: content must decide
    (root / "sub" / "gone.txt").unlink()
    (root / "sub" / "new.txt").write_bytes(b"new")
    change = recheck(before, cache)
    assert change is not None
    assert (change.modified, change.added, change.removed) == (
        ["edit.txt"],
        ["sub/new.txt"],
        ["sub/gone.txt"],
    )
    assert (change.n_modified, change.n_added, change.n_removed) == (1, 1, 1)
    assert change.before == before.digest and change.after not in (None, before.digest)


def test_same_size_edit_within_the_cache_tick_is_caught(tmp_path: Path) -> None:
    # With the default racy window, a freshly written file is never trusted from the cache.
    root = tmp_path / "ds"
    make(root)
    cache = StatCache()
    before = digest_input(root, cache)
    assert cache.stats.racy == 3 and len(cache) == 0
    p = root / "keep.txt"
    st = p.stat()
    p.write_bytes(b"KEEP")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # hide the edit from mtime
    change = recheck(before, cache)
    assert change is not None and change.modified == ["keep.txt"]


def test_file_input_change(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_bytes(b"1,2")
    cache = StatCache()
    before = digest_input(f, cache)
    f.write_bytes(b"1,3")
    change = recheck(before, cache)
    assert change is not None and change.modified == [str(f)] and change.after is not None


def test_input_removed(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    make(root)
    cache = StatCache()
    before = digest_input(root, cache)
    shutil.rmtree(root)
    change = recheck(before, cache)
    assert change is not None and change.after is None and change.error is None


def test_recheck_of_a_digest_loaded_from_a_record(tmp_path: Path, store: Store) -> None:
    root = tmp_path / "ds"
    make(root)
    cache = StatCache()
    before = digest_input(root, cache)
    store_inputs([before], store)
    loaded = InputDigest.model_validate_json(before.model_dump_json())
    (root / "keep.txt").write_bytes(b"changed")
    change = recheck(loaded, cache, store)
    assert change is not None and change.modified == ["keep.txt"]
    # Without a store the change is still found, but the files cannot be named.
    change = recheck(loaded, StatCache())
    assert change is not None and change.after != before.digest


def test_many_changes_are_counted_and_truncated(tmp_path: Path) -> None:
    from ledger.capture import data

    root = tmp_path / "ds"
    root.mkdir()
    cache = StatCache()
    before = digest_input(root, cache)
    for i in range(data.MAX_NAMES + 5):
        (root / f"f{i:05d}").write_bytes(b"")
    change = recheck(before, cache)
    assert change is not None and change.truncated
    assert change.n_added == data.MAX_NAMES + 5 and len(change.added) == data.MAX_NAMES


def test_at_most_1000_names_are_listed_per_kind_of_change(tmp_path: Path) -> None:
    # docs: the names of each kind of change are listed up to 1,000, the counts stay exact.
    root = tmp_path / "ds"
    make(root)
    cache = StatCache(racy_window_ns=0)
    before = digest_input(root, cache)
    for i in range(1000):
        (root / f"n{i:04}").write_bytes(b"")
    change = recheck(before, cache)
    assert change is not None
    assert (len(change.added), change.n_added, change.truncated) == (1000, 1000, False)
    (root / "n1000").write_bytes(b"")
    change = recheck(before, cache)
    assert change is not None
    assert (len(change.added), change.n_added, change.truncated) == (1000, 1001, True)
    assert change.added == [f"n{i:04}" for i in range(1000)]
