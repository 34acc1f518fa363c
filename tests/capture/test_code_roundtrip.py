"""The key property: a snapshot materialised into a fresh directory is byte-identical to the
working tree it was taken from (content, executable bits, symlinks), minus ignored files and .git.
"""

from __future__ import annotations

import os
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_code_helpers import git, git_env, make_repo, tree_state, write  # noqa: F401

from ledger.capture.code import code_digest, materialize_code, snapshot_code
from ledger.records.code import CodeSnapshot
from ledger.store import Store

pytestmark = pytest.mark.usefixtures("git_env")

BASE: dict[str, bytes | str] = {
    "README.md": "hello\n",
    "src/train.py": "print('train')\n",
    "src/model.py": "W = 1\n",
    "data/weights.bin": bytes(range(256)) * 4,
    "old_name.txt": "rename me\n",
    "gone.txt": "delete me\n",
    "run.sh": "#!/bin/sh\necho hi\n",
    "dir with space/ünï cödé.txt": "odd name\n",
    "no_newline.txt": "no newline at end",
}

# Each scenario prepares a working tree and returns (cwd to record from, tree root, ignored paths).
Scenario = Callable[[Path], tuple[Path, Path, set[str]]]


def clean(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    return repo, repo, set()


def dirty_staged_and_unstaged(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    write(repo, "src/model.py", "W = 2\n")
    git(repo, "add", "src/model.py")
    write(repo, "src/model.py", "W = 3  # staged 2, then edited\n")
    write(repo, "README.md", "hello\nunstaged line\n")
    write(repo, "src/staged_new.py", "NEW = True\n")
    git(repo, "add", "src/staged_new.py")
    write(repo, "no_newline.txt", "still no newline, but changed")
    write(repo, "dir with space/ünï cödé.txt", "odd name, edited\r\nwith CRLF\r\n")
    return repo, repo, set()


def binary_modified_and_added(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    write(repo, "data/weights.bin", bytes(reversed(range(256))) * 8 + b"\x00\xff")
    write(repo, "data/new.bin", os.urandom(3000))
    git(repo, "add", "data/new.bin")
    write(repo, "data/untracked.bin", b"\x00\x01\x02" * 100)
    return repo, repo, set()


def renamed(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    git(repo, "mv", "old_name.txt", "src/new_name.txt")
    write(repo, "src/new_name.txt", "rename me\nand edit me\n")
    os.rename(repo / "src/model.py", repo / "src/model2.py")  # not staged: delete + untracked
    return repo, repo, set()


def deleted(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    git(repo, "rm", "--quiet", "gone.txt")
    (repo / "data/weights.bin").unlink()
    return repo, repo, set()


def mode_changes(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", {**BASE, "tool.sh": "#!/bin/sh\n"})
    git(repo, "update-index", "--chmod=+x", "run.sh")
    (repo / "run.sh").chmod(0o755)
    git(repo, "commit", "--quiet", "-m", "exec run.sh")
    (repo / "src/train.py").chmod(0o755)  # +x, unstaged
    (repo / "run.sh").chmod(0o644)  # -x
    write(repo, "tool.sh", "#!/bin/sh\necho changed\n", executable=True)  # content and mode
    return repo, repo, set()


def untracked_and_ignored(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", {**BASE, ".gitignore": "*.log\nbuild/\n"})
    write(repo, "notes.txt", "untracked\n")
    write(repo, "src/helpers/util.py", "X = 1\n")
    write(repo, "bin/tool", "#!/bin/sh\n", executable=True)
    os.symlink("../README.md", repo / "src/readme_link")
    os.symlink("missing-target", repo / "dangling")
    write(repo, "train.log", "ignored\n")
    write(repo, "build/out.o", b"\x7fELF")
    return repo, repo, {"train.log", "build/out.o"}


def symlinks_tracked(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    os.symlink("src/train.py", repo / "entry.py")
    os.symlink("src", repo / "code")
    git(repo, "add", "entry.py", "code")
    git(repo, "commit", "--quiet", "-m", "links")
    (repo / "entry.py").unlink()
    os.symlink("src/model.py", repo / "entry.py")  # retargeted
    return repo, repo, set()


def no_commits(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo")
    write(repo, "a.py", "A = 1\n")
    write(repo, "b.bin", b"\x00\x10\x20")
    git(repo, "add", "a.py", "b.bin")
    write(repo, "a.py", "A = 2  # edited after staging\n")
    write(repo, "c.py", "untracked\n")
    write(repo, "x.sh", "#!/bin/sh\n", executable=True)
    git(repo, "add", "x.sh")
    return repo, repo, set()


def no_commits_nothing_staged(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo")
    write(repo, "only_untracked.py", "pass\n")
    return repo, repo, set()


def sha256_repository(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--object-format=sha256")
    write(repo, "a.txt", "a\n")
    write(repo, "b.bin", b"\x00\x01")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "initial")
    write(repo, "a.txt", "a\nb\n")
    write(repo, "b.bin", b"\x00\x02")
    write(repo, "u.txt", "untracked\n")
    return repo, repo, set()


def from_subdirectory(tmp: Path) -> tuple[Path, Path, set[str]]:
    repo = make_repo(tmp / "repo", BASE)
    write(repo, "src/train.py", "print('edited')\n")
    return repo / "src", repo, set()


def outside_repo(tmp: Path) -> tuple[Path, Path, set[str]]:
    d = tmp / "plain"
    write(d, "train.py", "print(1)\n")
    write(d, "lib/util.py", "U = 1\n")
    write(d, "run.sh", "#!/bin/sh\n", executable=True)
    write(d, "weights.bin", os.urandom(500))
    os.symlink("lib/util.py", d / "util_link.py")
    write(d, "__pycache__/train.cpython-311.pyc", b"\x00")
    write(d, ".venv/pyvenv.cfg", "home = /usr\n")
    write(d, ".venv/lib/site.py", "x\n")
    skipped = {"__pycache__/train.cpython-311.pyc", ".venv/pyvenv.cfg", ".venv/lib/site.py"}
    return d, d, skipped


def submodule(tmp: Path) -> tuple[Path, Path, set[str]]:
    lib = make_repo(tmp / "lib", {"lib.py": "V = 1\n"})
    write(lib, "lib.py", "V = 2\n")
    git(lib, "commit", "--quiet", "-am", "v2")
    repo = make_repo(tmp / "repo", BASE)
    git(repo, "submodule", "--quiet", "add", str(lib), "ext/lib")
    git(repo, "commit", "--quiet", "-m", "add submodule")
    sub = repo / "ext/lib"
    git(sub, "checkout", "--quiet", "HEAD~1")  # checked out at a commit the gitlink does not name
    write(repo, "README.md", "with a submodule\n")
    return repo, repo, set()


SCENARIOS: list[Scenario] = [
    clean,
    dirty_staged_and_unstaged,
    binary_modified_and_added,
    renamed,
    deleted,
    mode_changes,
    untracked_and_ignored,
    symlinks_tracked,
    no_commits,
    no_commits_nothing_staged,
    sha256_repository,
    from_subdirectory,
    outside_repo,
    submodule,
]


def roundtrip(cwd: Path, store: Store, dest: Path) -> tuple[CodeSnapshot, Path]:
    snap = snapshot_code(cwd, store)
    # Through the store and back, as replay will read it.
    stored = CodeSnapshot.model_validate(store.get_json(store.put_json(snap.to_json())))
    return stored, materialize_code(stored, store, dest)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_materialized_tree_is_byte_identical(
    scenario: Scenario, tmp_path: Path, store: Store
) -> None:
    cwd, root, ignored = scenario(tmp_path)
    before_index = (root / ".git/index").read_bytes() if (root / ".git/index").exists() else None
    expected = tree_state(root, skip=ignored)

    snap, run_dir = roundtrip(cwd, store, tmp_path / "replay")

    dest = tmp_path / "replay"
    assert tree_state(dest) == expected
    assert run_dir == dest / cwd.relative_to(root)
    assert snap.cwd_relpath == cwd.relative_to(root).as_posix()
    assert not set(tree_state(dest)) & ignored
    # Capture only reads: the user's tree and index are as they were.
    assert tree_state(root, skip=ignored) == expected
    if before_index is not None:
        assert (root / ".git/index").read_bytes() == before_index
    assert snap.dirty == (scenario not in (clean, outside_repo))
    if scenario in (no_commits, no_commits_nothing_staged):
        assert snap.commit is None
    elif snap.in_repo:
        assert snap.commit == git(root, "rev-parse", "HEAD")
        assert snap.object_format == ("sha256" if scenario is sha256_repository else "sha1")


def test_a_second_snapshot_of_the_same_tree_has_the_same_digest(
    tmp_path: Path, store: Store
) -> None:
    cwd, _, _ = dirty_staged_and_unstaged(tmp_path)
    first, second = snapshot_code(cwd, store), snapshot_code(cwd, store)
    assert code_digest(first) == code_digest(second)
    write(cwd, "src/model.py", "W = 4\n")
    assert code_digest(snapshot_code(cwd, store)) != code_digest(first)


def test_materialized_replay_can_be_snapshotted_to_the_same_digest(
    tmp_path: Path, store: Store
) -> None:
    cwd, _, _ = binary_modified_and_added(tmp_path)
    snap, run_dir = roundtrip(cwd, store, tmp_path / "replay")
    again = snapshot_code(run_dir, store)
    assert again.commit == snap.commit
    assert again.patch == snap.patch
    assert again.untracked == snap.untracked
    assert code_digest(again) == code_digest(snap)


_NAMES = st.sampled_from(["a.txt", "b.bin", "sub/c.py", "sub/deep/d.sh", "e f.txt"])
_DATA = st.binary(max_size=300) | st.text(string.printable, max_size=200).map(str.encode)
_EDIT = st.tuples(
    st.sampled_from(["write", "write_x", "delete", "stage", "chmod", "untracked"]), _NAMES, _DATA
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    start=st.dictionaries(_NAMES, _DATA, min_size=1),
    edits=st.lists(_EDIT, max_size=8),
)
def test_random_edits_roundtrip(
    tmp_path_factory: pytest.TempPathFactory,
    start: dict[str, bytes],
    edits: list[tuple[str, str, bytes]],
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    store = Store.init(tmp / ".ledger")
    repo = make_repo(tmp / "repo", dict(start))
    for op, name, data in edits:
        path = repo / name
        if op in ("write", "write_x"):
            write(repo, name, data, executable=op == "write_x")
        elif op == "untracked":
            write(repo, "new/" + name, data)
        elif op == "delete" and path.exists():
            path.unlink()
        elif op == "chmod" and path.exists():
            path.chmod(path.stat().st_mode ^ 0o100)
        elif op == "stage" and path.exists():
            git(repo, "add", "--", name)
    expected = tree_state(repo)
    roundtrip(repo, store, tmp / "replay")
    assert tree_state(tmp / "replay") == expected
