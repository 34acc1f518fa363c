"""A commit carried in the store rebuilds as that exact commit, with no repository around."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from _share_lab import git_env

from ledger.capture.gitsource import (
    check_git_source,
    find_git_source,
    rebuild_from_source,
    store_git_source,
)
from ledger.errors import ReplayError
from ledger.store import Store


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, check=True, env=git_env(), capture_output=True)
    return out.stdout.decode().strip()


def test_rebuilt_commit_has_the_same_id_files_and_modes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(repo / "run.sh", 0o755)
    (repo / "sub").mkdir()
    (repo / "sub" / "data.bin").write_bytes(bytes(range(256)))
    os.symlink("sub/data.bin", repo / "link")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "forced.log").write_text("committed although ignored\n")
    _git(repo, "add", "-A")
    _git(repo, "add", "-f", "forced.log")
    _git(repo, "commit", "-qm", "one")
    (repo / "later.txt").write_text("x")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")  # a commit with a parent: rebuilt shallow
    commit = _git(repo, "rev-parse", "HEAD")

    store = Store.init(tmp_path / ".ledger")
    oid = store_git_source(store, repo, commit)
    assert store_git_source(store, repo, commit) == oid  # once
    shutil.rmtree(repo)
    src = find_git_source(store, commit)
    assert src is not None
    assert check_git_source(store, src) == []  # git's ids, recomputed without git
    dest = tmp_path / "rebuilt"
    dest.mkdir()
    rebuild_from_source(src, store, dest)
    assert _git(dest, "rev-parse", "HEAD") == commit
    assert _git(dest, "status", "--porcelain") == ""
    assert os.access(dest / "run.sh", os.X_OK)
    assert os.readlink(dest / "link") == "sub/data.bin"
    assert (dest / "forced.log").read_text() == "committed although ignored\n"
    assert _git(dest, "log", "--format=%s") == "two"


def test_a_damaged_source_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    commit = _git(repo, "rev-parse", "HEAD")
    store = Store.init(tmp_path / ".ledger")
    store_git_source(store, repo, commit)
    src = find_git_source(store, commit)
    assert src is not None
    forged = src.model_copy(update={"git_tree": "0" * 40})
    dest = tmp_path / "rebuilt"
    dest.mkdir()
    try:
        rebuild_from_source(forged, store, dest)
    except ReplayError as e:
        assert "is not that commit" in e.message and "record says tree 0000" in e.message
        assert not any(dest.iterdir())  # refused before anything was written
    else:
        raise AssertionError("a source whose files do not match its tree id was accepted")


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
def test_git_ids_are_recomputed_for_both_formats_with_submodules_and_nesting(
    tmp_path: Path, fmt: str
) -> None:
    """The pure-Python ids match git's: nested folders sorting around files of similar names
    (``a.b``, ``a/``, ``a0``), an empty file, a submodule entry, in sha1 and sha256 repos."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", f"--object-format={fmt}")
    for name in ("a.b", "a/x", "a/y/z", "a0", "b/empty", "-dash"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name if name != "b/empty" else "")
    _git(repo, "add", "-A")
    sub = "1" * (40 if fmt == "sha1" else 64)
    _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},a/mod")
    _git(repo, "commit", "-qm", "one")
    commit = _git(repo, "rev-parse", "HEAD")
    store = Store.init(tmp_path / ".ledger")
    store_git_source(store, repo, commit)
    src = find_git_source(store, commit)
    assert src is not None and src.object_format == fmt and len(src.gitlinks) == 1
    assert check_git_source(store, src) == []
    moved = src.model_copy(
        update={"gitlinks": [src.gitlinks[0].model_copy(update={"path": "b/mod"})]}
    )
    assert "make git tree" in check_git_source(store, moved)[0]
