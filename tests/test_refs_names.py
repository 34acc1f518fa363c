"""``RefStore.names``: which names a prefix lists, in which order, and when a listing is reused.

Pinned because mutation testing (issue #18) found the listing and its memo untested: a folder's
listing is reused while the folder's (inode, mtime) stays the same, except when the folder
changed within a second of being listed. The memo tests restore a folder's mtime by hand after
adding a ref, which is what a change within one clock tick looks like.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ledger.store.refs import RefStore

OID = "b3:" + "0" * 64


def _refs(root: Path, *names: str) -> RefStore:
    for name in names:
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(OID + "\n")
    return RefStore(root)


def _age(folder: Path, seconds: float = 10.0) -> tuple[int, int]:
    """Set the folder's mtime ``seconds`` in the past; return the (atime, mtime) set."""
    ns = time.time_ns() - int(seconds * 1e9)
    os.utime(folder, ns=(ns, ns))
    return ns, ns


def test_partial_prefix_filters_the_folder(tmp_path: Path) -> None:
    refs = _refs(tmp_path, "runs/abc", "runs/abd", "runs/xyz", "other/abc")
    assert refs.names("runs/ab") == ["runs/abc", "runs/abd"]
    assert refs.names("runs/") == ["runs/abc", "runs/abd", "runs/xyz"]
    assert refs.names("runs/q") == []


def test_a_flat_folder_is_listed_sorted(tmp_path: Path) -> None:
    names = [f"runs/{c}{i:02d}" for i, c in enumerate("qwertyuiopasdfghjklzxcvbnm")]
    refs = _refs(tmp_path, *reversed(names))
    assert refs.names("runs/") == sorted(names)


def test_nested_folders_sort_by_path_parts(tmp_path: Path) -> None:
    # '.' sorts before '/', so a plain sort puts x/a.b before x/a/y; by parts a < a.b.
    refs = _refs(tmp_path, "x/a.b", "x/a/y", "x/a/z")
    assert refs.names("") == ["x/a/y", "x/a/z", "x/a.b"]
    assert refs.names("x/") == ["x/a/y", "x/a/z", "x/a.b"]


def test_a_prefix_naming_a_file_or_nothing_lists_nothing(tmp_path: Path) -> None:
    refs = _refs(tmp_path, "runs/abc")
    assert refs.names("runs/abc/") == []
    assert refs.names("missing/") == []


def test_symlinked_folders_are_not_followed(tmp_path: Path) -> None:
    refs = _refs(tmp_path / "refs", "runs/abc")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak").write_text(OID)
    (tmp_path / "refs" / "runs" / "link").symlink_to(outside, target_is_directory=True)
    assert refs.names("") == ["runs/abc"]
    assert refs.names("runs/") == ["runs/abc"]


def test_an_old_folder_listing_is_reused_while_its_mtime_stays(tmp_path: Path) -> None:
    refs = _refs(tmp_path, "checkpoints/run1/step-1", "checkpoints/run1/latest")
    folder = tmp_path / "checkpoints" / "run1"
    times = _age(folder)
    first = refs.names("checkpoints/run1/")
    assert first == ["checkpoints/run1/latest", "checkpoints/run1/step-1"]
    (folder / "step-2").write_text(OID)
    os.utime(folder, ns=times)  # a change that left the mtime as it was
    again = refs.names("checkpoints/run1/")
    assert again == first  # the memo: keyed on (inode, mtime), both unchanged
    again.append("mutated by the caller")
    assert refs.names("checkpoints/run1/") == first  # callers get a copy


def test_a_changed_folder_is_listed_again(tmp_path: Path) -> None:
    refs = _refs(tmp_path, "runs/a")
    folder = tmp_path / "runs"
    _age(folder)
    assert refs.names("runs/") == ["runs/a"]
    (folder / "b").write_text(OID)
    os.utime(folder, ns=(time.time_ns(), time.time_ns()))
    assert refs.names("runs/") == ["runs/a", "runs/b"]


def test_a_folder_changed_within_a_second_of_listing_is_not_kept(tmp_path: Path) -> None:
    refs = _refs(tmp_path, "runs/a")
    folder = tmp_path / "runs"
    st = folder.stat()  # written just now: within the second
    assert refs.names("runs/") == ["runs/a"]
    (folder / "b").write_text(OID)
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))  # same tick: mtime unchanged
    assert refs.names("runs/") == ["runs/a", "runs/b"]
