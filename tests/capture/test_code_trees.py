"""build_tree / write_tree: the shared helpers that move files in and out of the store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_code_helpers import tree_state, write

from ledger.capture.trees import build_tree, check_tree, load_tree, put_tree, write_tree
from ledger.errors import UsageError
from ledger.records.tree import Tree, TreeEntry
from ledger.store import Store


def test_build_and_write_round_trip(tmp_path: Path, store: Store) -> None:
    src = tmp_path / "src"
    write(src, "a.txt", "a")
    write(src, "bin/run", "#!/bin/sh\n", executable=True)
    write(src, "empty", b"")
    os.symlink("../a.txt", src / "bin/link")
    os.mkfifo(src / "pipe")
    tree = build_tree(src, ["a.txt", "bin/run", "empty", "bin/link", "pipe", "gone"], store)
    assert [e.path for e in tree.entries] == ["a.txt", "bin/link", "bin/run", "empty"]
    assert tree.total_size == 1 + len("../a.txt") + len("#!/bin/sh\n")
    assert "pipe (not a regular file or symlink)" in tree.note
    assert "gone (vanished while it was read)" in tree.note
    oid = put_tree(store, tree)
    assert oid == tree.digest()
    write_tree(load_tree(store, oid), store, tmp_path / "out")
    (src / "pipe").unlink()  # reading a fifo would block
    expected = tree_state(src)
    assert tree_state(tmp_path / "out") == expected


def entry(store: Store, path: str, data: bytes, kind: str = "file") -> TreeEntry:
    oid = store.objects.put_bytes(data)
    return TreeEntry.model_construct(
        path=path, type=kind, executable=False, size=len(data), oid=oid
    )


def crafted(*entries: TreeEntry) -> Tree:
    return Tree.model_construct(kind="tree", entries=list(entries), total_size=0)


@pytest.mark.parametrize(
    ("entries", "named", "why"),
    [
        ([("../evil", b"x", "file")], "../evil", "stay inside"),
        ([("/abs", b"x", "file")], "/abs", "stay inside"),
        ([("ok", b"x", "file"), ("ok", b"y", "file")], "ok", "twice"),
        ([("l", b"/etc", "symlink")], "l", "points outside"),
        ([("d/l", b"../..", "symlink")], "d/l", "points outside"),
        # Each link alone stays inside; followed through each other they climb out.
        ([("d/up", b"..", "symlink"), ("x", b"d/up/..", "symlink")], "x", "points outside"),
        ([("loop", b"loop", "symlink")], "loop", "points outside"),
        # Writing through a symlink of the tree itself.
        ([("a", b"sub", "symlink"), ("a/f", b"x", "file")], "a", "both a file and a directory"),
    ],
)
def test_crafted_trees_are_refused_before_writing(
    tmp_path: Path,
    store: Store,
    entries: list[tuple[str, bytes, str]],
    named: str,
    why: str,
) -> None:
    tree = crafted(*(entry(store, p, d, k) for p, d, k in entries))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(UsageError, match=why) as err:
        write_tree(tree, store, dest)
    assert repr(named) in err.value.message
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_existing_symlink_in_dest_is_not_written_through(tmp_path: Path, store: Store) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", dest / "data")
    with pytest.raises(UsageError, match="is a symlink"):
        write_tree(crafted(entry(store, "data/f", b"x")), store, dest)
    # A symlink of the tree that reaches out through one already there is refused too.
    with pytest.raises(UsageError, match="points outside"):
        check_tree(crafted(entry(store, "l", b"data/x", "symlink")), store, dest)
    assert list((tmp_path / "outside").iterdir()) == []


def test_existing_file_is_not_overwritten(tmp_path: Path, store: Store) -> None:
    dest = tmp_path / "dest"
    write(dest, "f", "mine")
    with pytest.raises(UsageError, match="already exists"):
        write_tree(crafted(entry(store, "f", b"theirs")), store, dest)
    assert (dest / "f").read_text() == "mine"


def test_load_tree_rejects_a_crafted_record(store: Store) -> None:
    blob = store.objects.put_bytes(b"x")
    oid = store.put_json(
        {
            "kind": "tree",
            "schema": 1,
            "entries": [{"path": "../evil", "size": 1, "oid": blob}],
            "total_size": 1,
        }
    )
    with pytest.raises(UsageError, match=r"unsafe path '\.\./evil'"):
        load_tree(store, oid)
