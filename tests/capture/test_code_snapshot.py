"""What snapshot_code records, what it leaves out and says so, and --require-clean."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_code_helpers import git, git_env, make_repo, write  # noqa: F401

from ledger.capture.code import code_digest, require_clean, snapshot_code
from ledger.capture.gitsnap import redact_url
from ledger.capture.trees import load_tree
from ledger.errors import UsageError
from ledger.store import Store

pytestmark = pytest.mark.usefixtures("git_env")

FILES: dict[str, bytes | str] = {"train.py": "print(1)\n", "lib/m.py": "M = 1\n"}


def untracked_paths(store: Store, oid: str | None) -> list[str]:
    return [] if oid is None else [e.path for e in load_tree(store, oid).entries]


def test_clean_repo(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    snap = snapshot_code(repo / "lib", store)
    assert snap.in_repo and not snap.dirty
    assert snap.commit == git(repo, "rev-parse", "HEAD")
    assert snap.branch == "main"
    assert snap.root == str(repo.resolve())
    assert snap.cwd_relpath == "lib"
    assert snap.patch is None and snap.patch_stats is None and snap.untracked is None
    assert snap.snapshot is None and not snap.truncated and snap.notes == []


def test_detached_head_has_no_branch(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "checkout", "--quiet", "--detach", "HEAD")
    assert snapshot_code(repo, store).branch is None


def test_patch_holds_staged_and_unstaged_changes(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "train.py", "print(2)\n")
    git(repo, "add", "train.py")
    write(repo, "lib/m.py", "M = 2\n")
    write(repo, "blob.bin", b"\x00\xff" * 10)
    git(repo, "add", "blob.bin")
    snap = snapshot_code(repo, store)
    assert snap.dirty and snap.patch is not None and snap.patch_stats is not None
    patch = store.objects.get_bytes(snap.patch)
    assert snap.patch_stats.files == 3
    assert snap.patch_stats.bytes == len(patch)
    assert b"+print(2)" in patch and b"+M = 2" in patch and b"GIT binary patch" in patch
    assert snap.untracked is None


def test_untracked_captured_but_ignored_and_ledger_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, ".gitignore": "*.ckpt\n"})
    store = Store.init(repo / ".ledger")  # inside the repository and not ignored
    write(repo, "new.py", "N = 1\n")
    write(repo, "model.ckpt", b"\x00" * 100)
    snap = snapshot_code(repo, store)
    assert untracked_paths(store, snap.untracked) == ["new.py"]
    assert any("the ledger's own directory is never captured" in n for n in snap.notes)
    assert snap.dirty


def test_only_ignored_files_means_clean(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, ".gitignore": "out/\n"})
    write(repo, "out/result.txt", "x")
    snap = snapshot_code(repo, store)
    assert not snap.dirty and snap.untracked is None


def test_large_untracked_file_is_skipped_with_a_note(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "small.txt", "s" * 10)
    write(repo, "huge.bin", b"h" * 5000)
    snap = snapshot_code(repo, store, max_bytes=1000)
    assert untracked_paths(store, snap.untracked) == ["small.txt"]
    assert snap.truncated
    assert any("huge.bin (5,000 bytes)" in n and "1,000-byte limit" in n for n in snap.notes)
    assert snap.untracked is not None
    assert load_tree(store, snap.untracked).truncated


def test_too_many_untracked_files_are_named(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    for i in range(5):
        write(repo, f"u{i}.txt", str(i))
    snap = snapshot_code(repo, store, max_files=3)
    assert untracked_paths(store, snap.untracked) == ["u0.txt", "u1.txt", "u2.txt"]
    assert snap.truncated
    assert any("3-file limit (2): u3.txt, u4.txt" in n for n in snap.notes)


def test_untracked_symlink_leaving_the_repo_is_noted(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    os.symlink("/etc/hostname", repo / "abs_link")
    os.symlink("../../outside", repo / "rel_link")
    os.symlink("train.py", repo / "ok_link")
    snap = snapshot_code(repo, store)
    assert untracked_paths(store, snap.untracked) == ["ok_link"]
    note = " ".join(snap.notes)
    assert "abs_link (symlink to /etc/hostname points outside" in note
    assert "rel_link (symlink to ../../outside points outside" in note


def test_nested_repository_is_noted(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    make_repo(repo / "vendor/other", {"x.py": "x"})
    snap = snapshot_code(repo, store)
    assert any("nested git repositories" in n and "vendor/other/" in n for n in snap.notes)
    assert snap.dirty


def test_remote_credentials_are_redacted(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "remote", "add", "origin", "https://alice:s3cr3t@git.example.com/team/proj.git")
    git(repo, "remote", "add", "ci", "https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r")
    git(repo, "remote", "add", "ssh", "git@github.com:o/r.git")
    snap = snapshot_code(repo, store)
    assert snap.remotes == {
        "origin": "https://alice:***@git.example.com/team/proj.git",
        "ci": "https://***@github.com/o/r",
        "ssh": "git@github.com:o/r.git",
    }
    assert "s3cr3t" not in snap.model_dump_json() and "ghp_" not in snap.model_dump_json()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:p@h.com/x", "https://u:***@h.com/x"),
        ("http://u:p@h.com:8080/x?y=1", "http://u:***@h.com:8080/x?y=1"),
        ("ssh://git:tok@h.com/x", "ssh://git:***@h.com/x"),
        ("https://bob@h.com/x", "https://bob@h.com/x"),
        ("https://h.com/x", "https://h.com/x"),
        ("/local/path", "/local/path"),
        ("git@h.com:x/y.git", "git@h.com:x/y.git"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_no_commits_yet(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "A = 1\n")
    git(repo, "add", "a.py")
    write(repo, "b.py", "B = 1\n")
    snap = snapshot_code(repo, store)
    assert snap.commit is None and snap.branch == "main" and snap.dirty
    assert snap.patch is not None and b"+A = 1" in store.objects.get_bytes(snap.patch)
    assert untracked_paths(store, snap.untracked) == ["b.py"]


def test_submodule_is_recorded(tmp_path: Path, store: Store) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.py": "V = 1\n"})
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "submodule", "--quiet", "add", str(lib), "ext/lib")
    git(repo, "commit", "--quiet", "-m", "submodule")
    snap = snapshot_code(repo, store)
    [sub] = snap.submodules
    assert sub.path == "ext/lib" and sub.commit == git(lib, "rev-parse", "HEAD")
    assert not sub.dirty and sub.url == str(lib)
    assert not snap.dirty

    git(repo, "config", "-f", ".gitmodules", "submodule.ext/lib.url", "https://t:pw@h.com/l.git")
    assert snapshot_code(repo, store).submodules[0].url == "https://t:***@h.com/l.git"

    write(repo, "ext/lib/lib.py", "V = 99\n")
    snap = snapshot_code(repo, store)
    assert snap.submodules[0].dirty and snap.dirty
    assert any("ext/lib has uncommitted changes that are not captured" in n for n in snap.notes)


def test_uninitialised_submodule(tmp_path: Path, store: Store) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.py": "V = 1\n"})
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "submodule", "--quiet", "add", str(lib), "ext/lib")
    git(repo, "commit", "--quiet", "-m", "submodule")
    git(repo, "submodule", "--quiet", "deinit", "--force", "ext/lib")
    snap = snapshot_code(repo, store)
    assert snap.submodules[0].commit is None
    assert any("ext/lib is not initialised" in n for n in snap.notes)


def test_outside_a_repository_with_limits(tmp_path: Path, store: Store) -> None:
    d = tmp_path / "plain"
    for i in range(6):
        write(d, f"f{i}.py", "x" * 10)
    write(d, "venv/pyvenv.cfg", "home = /usr\n")
    write(d, ".git/HEAD", "not a repository, just a directory named .git\n")
    snap = snapshot_code(d, store, max_files=4)
    assert not snap.in_repo and snap.commit is None and snap.patch is None
    assert snap.snapshot is not None and snap.truncated
    assert untracked_paths(store, snap.snapshot) == ["f0.py", "f1.py", "f2.py", "f3.py"]
    notes = " ".join(snap.notes)
    assert "not inside a git repository" in notes
    assert "4-file limit (2): f4.py, f5.py" in notes
    assert "virtual environments, not captured (1): venv" in notes


def test_outside_a_repository_byte_limit(tmp_path: Path, store: Store) -> None:
    d = tmp_path / "plain"
    write(d, "a.py", "a" * 100)
    write(d, "b.bin", b"b" * 1000)
    snap = snapshot_code(d, store, max_bytes=500)
    assert untracked_paths(store, snap.snapshot) == ["a.py"]
    assert any("b.bin (1,000 bytes)" in n for n in snap.notes)


def test_not_a_directory(tmp_path: Path, store: Store) -> None:
    with pytest.raises(UsageError, match="is not a directory"):
        snapshot_code(tmp_path / "nope", store)


def test_code_digest_tracks_each_part(tmp_path: Path, store: Store) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    clean = snapshot_code(repo, store)
    write(repo, "train.py", "print(2)\n")
    patched = snapshot_code(repo, store)
    write(repo, "extra.py", "E = 1\n")
    with_untracked = snapshot_code(repo, store)
    digests = {code_digest(s) for s in (clean, patched, with_untracked)}
    assert len(digests) == 3
    assert all(d.startswith("b3:") and len(d) == 67 for d in digests)
    # Informational fields do not change what code it is.
    moved = clean.model_copy(update={"root": "/elsewhere", "notes": ["x"], "branch": "other"})
    assert code_digest(moved) == code_digest(clean)


def test_require_clean_passes_on_a_clean_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    Store.init(repo / ".ledger")  # the ledger's own files do not count
    require_clean(repo / "lib")


def test_require_clean_names_dirty_and_untracked_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "train.py", "print(2)\n")
    write(repo, "new.py", "N = 1\n")
    git(repo, "mv", "lib/m.py", "lib/n.py")
    with pytest.raises(UsageError) as err:
        require_clean(repo)
    msg = err.value.message
    assert "is not clean (3)" in msg
    assert "M train.py" in msg and "?? new.py" in msg and "R lib/n.py" in msg
    assert err.value.hint and "commit or stash" in err.value.hint


def test_require_clean_outside_a_repository(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs a git repository"):
        require_clean(tmp_path)


def test_require_clean_without_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(UsageError, match="no commits yet"):
        require_clean(repo)


@pytest.mark.parametrize("name", ["runs-store", "st[or]e*?", "my store "])
def test_a_ledger_under_any_name_inside_the_tree_is_neither_walked_nor_captured(
    tmp_path: Path, name: str
) -> None:
    """git is told to skip the ledger's directory (glob characters in its name taken literally),
    so its objects are never listed, however many runs pile up there."""
    repo = make_repo(tmp_path / "repo", FILES)
    store = Store.init(repo / name)
    write(repo, f"{name}-sibling.py", "S = 1\n")  # a neighbour the pattern must not match
    write(repo, "new.py", "N = 1\n")
    snap = snapshot_code(repo, store)
    assert untracked_paths(store, snap.untracked) == sorted([f"{name}-sibling.py", "new.py"])
    assert any("the ledger's own directory is never captured" in n for n in snap.notes)
    # git's own answer: the listing the recorder asks for holds nothing under the ledger.
    from ledger.capture.gitsnap import untracked_paths as git_untracked

    listed = git_untracked(repo.resolve(), skip_dirs=[name, ".ledger"])
    assert sorted(listed) == sorted([f"{name}-sibling.py", "new.py"])
    assert any(p.startswith(f"{name}/") for p in git_untracked(repo.resolve()))


def test_an_ignored_ledger_gives_no_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, ".gitignore": ".ledger/\n"})
    store = Store.init(repo / ".ledger")
    write(repo, "new.py", "N = 1\n")
    snap = snapshot_code(repo, store)
    assert untracked_paths(store, snap.untracked) == ["new.py"]
    assert not any("never captured" in n for n in snap.notes)


def test_a_nested_ledger_directory_is_skipped_at_any_depth(tmp_path: Path, store: Store) -> None:
    """A `.ledger` directory deeper in the tree (another project's) is left out as before."""
    repo = make_repo(tmp_path / "repo", FILES)
    write(repo, "sub/.ledger/objects/x", "o")
    write(repo, "sub/keep.py", "K = 1\n")
    snap = snapshot_code(repo, store)
    assert untracked_paths(store, snap.untracked) == ["sub/keep.py"]
