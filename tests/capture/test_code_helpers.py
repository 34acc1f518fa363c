"""Helpers shared by the code-capture tests: real git repositories in tmp_path, and a byte-exact
picture of a working tree (content, executable bit, symlink targets)."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

State = dict[str, tuple[str, bytes, bool]]


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Isolate git from the machine's config; give it an identity and a default branch."""
    cfg = tmp_path / "gitconfig"
    cfg.write_text(
        "[user]\n\tname = Test\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(var, raising=False)
    yield


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def write(root: Path, rel: str, data: bytes | str, *, executable: bool = False) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    path.chmod(0o755 if executable else 0o644)
    return path


def make_repo(root: Path, files: dict[str, bytes | str] | None = None) -> Path:
    """A repository at ``root`` with ``files`` committed (nothing committed if None)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet")
    if files is not None:
        for rel, data in files.items():
            write(root, rel, data)
        git(root, "add", "-A")
        git(root, "commit", "--quiet", "-m", "initial")
    return root


def tree_state(root: Path, skip: set[str] | frozenset[str] = frozenset()) -> State:
    """path -> (type, content or target, executable) for every file and symlink, minus .git."""
    out: State = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for d in list(dirnames):
            if d == ".git":
                dirnames.remove(d)
            elif (here / d).is_symlink():
                filenames.append(d)
        for name in filenames:
            full = here / name
            rel = full.relative_to(root).as_posix()
            if name == ".git" or rel in skip:
                continue
            if full.is_symlink():
                out[rel] = ("symlink", os.fsencode(os.readlink(full)), False)
            else:
                mode = full.lstat().st_mode
                out[rel] = ("file", full.read_bytes(), bool(mode & stat.S_IXUSR))
    return out
