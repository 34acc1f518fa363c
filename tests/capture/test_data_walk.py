"""The walk of a directory input: one lstat per entry and no other system call per file on a
warm digest (the tree memo holds), whether a directory holds only regular files (the mapped
path) or a mix; the signature is the documented one on both paths."""

from __future__ import annotations

import os
import struct
import time
from collections import Counter
from pathlib import Path
from typing import Any

import blake3
import pytest

from ledger.capture import data
from ledger.capture.data import _walk, digest_input
from ledger.capture.statcache import StatCache


def tree(root: Path) -> int:
    """Folders of files only, a mixed one, a symlink, an empty folder and non-ASCII names;
    returns how many entries ``os.walk`` sees below ``root`` (folders included)."""
    for d in range(3):
        for i in range(7):
            (root / f"d{d}").mkdir(parents=True, exist_ok=True)
            (root / f"d{d}" / f"{i:02d}-é.bin").write_bytes(os.urandom(50 + i))
    os.utime(root / "d0" / "02-é.bin", ns=(1_000_000_000, 2_000_000_000))  # ctime != mtime
    (root / "d1" / "sub").mkdir()
    (root / "d1" / "sub" / "x").write_bytes(b"x")
    (root / "empty").mkdir()
    (root / "top.txt").write_bytes(b"top")
    os.symlink("top.txt", root / "link")
    return sum(len(ds) + len(fs) for _, ds, fs in os.walk(root))


def documented(items: list[data.Item]) -> bytes:
    """docs/reference/data-digests.md's signature, computed entry by entry."""
    h = blake3.blake3()
    for _, st, type in items:
        h.update(struct.pack("<QQqq", st.st_ino, 0 if type == "dir" else st.st_size,
                             st.st_mtime_ns, st.st_ctime_ns))  # fmt: skip
    h.update("\x00".join(rel for rel, _, _ in items).encode())
    return h.digest()


def test_folders_of_files_only_give_the_documented_signature_and_items(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    tree(root)
    items, signature = _walk(str(root), str(root) + "/")
    assert signature == documented(items)
    want = set()
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in files:
            want.add(
                (
                    os.path.normpath(os.path.join(rel, name)),
                    os.lstat(os.path.join(dirpath, name)).st_ino,
                )
            )
        if not dirs and not files:
            want.add((rel, os.lstat(dirpath).st_ino))
    assert {(rel, st.st_ino) for rel, st, _ in items} == want
    kinds = {rel: type for rel, _, type in items}
    assert kinds["link"] == "symlink" and kinds["empty"] == "dir"
    assert kinds["d0/00-é.bin"] == "file" and kinds["d1/sub/x"] == "file"
    # Walk order: a folder's entries together, in the order the folder lists them.
    for d in ("d0", "d2"):
        rels = [rel for rel, _, _ in items if rel.startswith(d + "/")]
        at = [rel for rel, _, _ in items].index(rels[0])
        assert [rel for rel, _, _ in items][at : at + len(rels)] == rels
        assert [d + "/" + n for n in os.listdir(root / d)] == rels


def test_a_changed_file_in_a_folder_of_files_only_changes_the_signature(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    tree(root)
    _, before = _walk(str(root), str(root) + "/")
    time.sleep(0.05)
    edited = root / "d2" / "03-é.bin"
    old = os.stat(edited)
    with open(edited, "r+b") as f:  # same size, new content, the mtime put back: only ctime moves
        f.write(b"!")
    os.utime(edited, ns=(old.st_atime_ns, old.st_mtime_ns))
    _, after = _walk(str(root), str(root) + "/")
    assert after != before
    os.rename(root / "d0" / "01-é.bin", root / "d0" / "01-renamed")
    _, renamed = _walk(str(root), str(root) + "/")
    assert renamed not in (before, after)


def test_a_warm_digest_lstats_each_entry_once_and_opens_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ds"
    entries = tree(root)
    cache_file = tmp_path / "cache"
    cold = StatCache.load(cache_file, racy_window_ns=0)
    want = digest_input(root, cold, dvc=False)
    cold.save()

    calls: Counter[str] = Counter()
    opened: list[str] = []

    def counting(name: str) -> Any:
        real = getattr(os, name)

        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            if name == "open":
                opened.append(os.fsdecode(path) if not isinstance(path, int) else str(path))
            return real(path, *args, **kwargs)

        return call

    for name in ("lstat", "stat", "open", "scandir"):
        monkeypatch.setattr(os, name, counting(name))
    cache = StatCache.load(cache_file, racy_window_ns=0)
    got = digest_input(root, cache, dvc=False)
    monkeypatch.undo()
    assert cache.stats.tree_hits == 1 and cache.stats.hashed == 0
    assert (got.digest, got.files) == (want.digest, want.files)
    # One lstat per entry below the input, one more per empty folder (its own, when it is
    # found empty), one stat of the input itself; every open is a folder's or the cache's.
    assert calls["lstat"] == entries + 1
    assert calls["stat"] == 1
    folders = {str(root)} | {str(p) for p in root.rglob("*") if p.is_dir() and not p.is_symlink()}
    assert set(opened) - {str(cache_file)} <= folders
    assert calls["scandir"] == 0  # a DirEntry's stat would be a system call not counted here
