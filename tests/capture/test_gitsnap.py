"""Finding the repository and reading HEAD and config with ``git`` itself (no gitpython)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_code_helpers import git, git_env, make_repo, write  # noqa: F401

from ledger.capture import gitsnap
from ledger.errors import UsageError


@pytest.mark.usefixtures("git_env")
def test_open_repo_from_a_subfolder_and_not_elsewhere(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    write(repo, "sub/deep/x.txt", "x")
    found = gitsnap.open_repo(repo / "sub" / "deep")
    assert found is not None and found.working_tree_dir == repo.resolve()
    assert gitsnap.open_repo(repo / ".git") is None  # no working tree there
    plain = tmp_path / "plain"
    plain.mkdir()
    assert gitsnap.open_repo(plain) is None
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    assert gitsnap.open_repo(bare) is None


@pytest.mark.usefixtures("git_env")
def test_branch_with_a_slash_and_a_tag_of_the_same_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a"})
    git(repo, "checkout", "-q", "-b", "feature/x")
    git(repo, "tag", "feature/x")  # `symbolic-ref --short` would say heads/feature/x
    git(repo, "remote", "add", "origin", "https://user:tok@example.org/a.git")
    git(repo, "remote", "add", "my.fork", "git@example.org:b.git")
    info = gitsnap.head_info(gitsnap.Repo(repo), repo)
    assert info.branch == "feature/x" and info.object_format == "sha1"
    assert info.remotes == {
        "origin": "https://user:***@example.org/a.git",
        "my.fork": "git@example.org:b.git",
    }


@pytest.mark.usefixtures("git_env")
def test_a_repository_git_refuses_is_an_error_not_a_plain_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / ".git" / "config").write_text("[core\n broken")
    with pytest.raises(UsageError, match="git rev-parse"):
        gitsnap.open_repo(repo)
