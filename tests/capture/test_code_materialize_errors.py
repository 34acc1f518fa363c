"""materialize_code refuses bad input before writing, and says what is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_code_helpers import git, git_env, make_repo, tree_state, write  # noqa: F401

from ledger.capture.code import materialize_code, snapshot_code
from ledger.errors import CorruptObjectError, ReplayError, UsageError
from ledger.records.code import CodeSnapshot
from ledger.store import Store

pytestmark = pytest.mark.usefixtures("git_env")

FILES: dict[str, bytes | str] = {"train.py": "print(1)\n"}


def dirty_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "train.py", "print(2)\n")
    write(repo, "new.py", "N = 1\n")
    return repo


def test_non_empty_dest_is_refused_and_left_alone(tmp_path: Path, store: Store) -> None:
    snap = snapshot_code(dirty_repo(tmp_path), store)
    dest = tmp_path / "dest"
    write(dest, "keep.txt", "mine")
    with pytest.raises(UsageError, match="is not empty"):
        materialize_code(snap, store, dest)
    assert tree_state(dest) == {"keep.txt": ("file", b"mine", False)}


def test_dest_that_is_a_file_is_refused(tmp_path: Path, store: Store) -> None:
    snap = snapshot_code(dirty_repo(tmp_path), store)
    write(tmp_path, "afile", "x")
    with pytest.raises(UsageError, match="not a directory"):
        materialize_code(snap, store, tmp_path / "afile")


def test_empty_existing_dest_is_used(tmp_path: Path, store: Store) -> None:
    repo = dirty_repo(tmp_path)
    snap = snapshot_code(repo, store)
    (tmp_path / "dest").mkdir()
    assert materialize_code(snap, store, tmp_path / "dest") == tmp_path / "dest"
    assert tree_state(tmp_path / "dest") == tree_state(repo)


def evil_tree_oid(store: Store, path: str) -> str:
    """A tree record crafted in raw JSON, as a damaged or hostile ledger could hold it."""
    blob = store.objects.put_bytes(b"pwned\n")
    entry = {"path": path, "type": "file", "executable": False, "size": 6, "oid": blob}
    return store.put_json(
        {
            "kind": "tree",
            "schema": 1,
            "entries": [entry],
            "total_size": 6,
            "truncated": False,
            "note": "",
        }
    )


@pytest.mark.parametrize("bad", ["../evil", "/tmp/evil", "a/../../evil"])
def test_tree_escaping_dest_is_refused_before_anything_is_written(
    tmp_path: Path, store: Store, bad: str
) -> None:
    repo = dirty_repo(tmp_path)
    snap = snapshot_code(repo, store)
    crafted = snap.model_copy(update={"untracked": evil_tree_oid(store, bad)})
    dest = tmp_path / "work" / "dest"
    with pytest.raises(UsageError) as err:
        materialize_code(crafted, store, dest)
    assert repr(bad) in err.value.message
    assert not dest.exists()  # not even the clone was made
    assert not (tmp_path / "work" / "evil").exists() and not Path("/tmp/evil").exists()


def test_snapshot_tree_escaping_dest_is_refused(tmp_path: Path, store: Store) -> None:
    snap = CodeSnapshot(in_repo=False, root=str(tmp_path), snapshot=evil_tree_oid(store, "../x"))
    with pytest.raises(UsageError, match=r"'\.\./x'"):
        materialize_code(snap, store, tmp_path / "dest")
    assert not (tmp_path / "x").exists()


def test_missing_commit_says_which_and_how_to_supply_it(tmp_path: Path, store: Store) -> None:
    repo = dirty_repo(tmp_path)
    snap = snapshot_code(repo, store)
    other = make_repo(tmp_path / "other", {"unrelated.txt": "u"})
    with pytest.raises(ReplayError) as err:
        materialize_code(snap, store, tmp_path / "dest", source_repo=other)
    assert snap.commit is not None
    assert f"commit {snap.commit} is not in {other}" in err.value.message
    assert err.value.hint and "fetch" in err.value.hint and "source_repo" in err.value.hint
    assert not (tmp_path / "dest").exists()  # the directory it made is removed again


def test_commit_gone_from_the_recorded_repository(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "train.py", "print(2)\n")
    git(repo, "commit", "--quiet", "-am", "second")
    snap = snapshot_code(repo, store)
    git(repo, "reset", "--quiet", "--hard", "HEAD~1")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "--quiet", "--prune=now")
    with pytest.raises(ReplayError, match="is not in"):
        materialize_code(snap, store, tmp_path / "dest")


def test_source_repo_that_is_not_a_repository(tmp_path: Path, store: Store) -> None:
    snap = snapshot_code(dirty_repo(tmp_path), store)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReplayError, match="is not a git repository"):
        materialize_code(snap, store, tmp_path / "dest", source_repo=tmp_path / "empty")


def test_source_repo_clone_is_used(tmp_path: Path, store: Store) -> None:
    repo = dirty_repo(tmp_path)
    snap = snapshot_code(repo, store)
    expected = tree_state(repo)
    git(tmp_path, "clone", "--quiet", str(repo), "mirror")
    git(repo, "checkout", "--quiet", "--", ".")  # the original moves on; the mirror has the commit
    run_dir = materialize_code(snap, store, tmp_path / "dest", source_repo=tmp_path / "mirror")
    assert tree_state(run_dir) == expected


def test_missing_submodule_checkout(tmp_path: Path, store: Store) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.py": "V = 1\n"})
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "submodule", "--quiet", "add", str(lib), "ext/lib")
    git(repo, "commit", "--quiet", "-m", "submodule")
    snap = snapshot_code(repo, store)
    git(repo, "submodule", "--quiet", "deinit", "--force", "ext/lib")
    # Deinitialised: the objects are still in .git/modules, and are used from there.
    run_dir = materialize_code(snap, store, tmp_path / "dest")
    assert (run_dir / "ext/lib/lib.py").read_text() == "V = 1\n"
    shutil.rmtree(repo / ".git/modules/ext/lib")
    with pytest.raises(ReplayError, match=r"submodule ext/lib: commit [0-9a-f]{40} is in neither"):
        materialize_code(snap, store, tmp_path / "dest2")
    assert not (tmp_path / "dest2").exists()


def test_corrupt_patch_object_is_detected(tmp_path: Path, store: Store) -> None:
    snap = snapshot_code(dirty_repo(tmp_path), store)
    assert snap.patch is not None
    path = store.objects.path_of(snap.patch)
    path.chmod(0o644)
    data = path.read_bytes()
    path.write_bytes(data[:-2] + bytes([data[-2] ^ 1]) + data[-1:])
    with pytest.raises(CorruptObjectError):
        materialize_code(snap, store, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_patch_that_does_not_apply(tmp_path: Path, store: Store) -> None:
    repo = dirty_repo(tmp_path)
    snap = snapshot_code(repo, store)
    bogus = store.objects.put_bytes(
        b"diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n"
        b"@@ -1 +1 @@\n-not what is there\n+x\n"
    )
    with pytest.raises(ReplayError, match="does not apply onto"):
        materialize_code(snap.model_copy(update={"patch": bogus}), store, tmp_path / "dest")
