"""`ledger diff` shows the source changes between two runs' code as `git diff` would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="t",
    GIT_AUTHOR_EMAIL="t@e",
    GIT_COMMITTER_NAME="t",
    GIT_COMMITTER_EMAIL="t@e",
)


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)
    return proc.stdout.decode()


def _record(root: Path, *cmd: str) -> str:
    r = run_ledger("record", "--json", "--", *cmd, cwd=root)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _patch(root: Path, a: str, b: str) -> str:
    r = run_ledger("diff", a, b, "--json", cwd=root)
    assert r.returncode == 0, r.stderr
    code = json.loads(r.stdout)["code"]
    assert code["same"] is False
    return str(code["patch"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('hello')\n" + "x = 1\n" * 20)
    (root / "pkg" / "model.py").write_text("WIDTH = 8\n")
    (root / "weights.bin").write_bytes(bytes(range(256)))
    (root / ".gitignore").write_text(".ledger/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one")
    init_ledger(root)
    return root


def _only_sources(patch: str) -> list[str]:
    """The files a patch touches, from its `diff --git` lines (checked for plain prefixes)."""
    files = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            a, b = line[len("diff --git ") :].split(" ")
            assert a.startswith("a/") and b.startswith("b/") and not a.startswith("a/a/"), line
            files.append(b[2:])
    return files


def test_diff_between_two_commits_is_git_diff(repo: Path) -> None:
    a = _record(repo, sys.executable, "train.py")
    (repo / "train.py").write_text("print('hello, world')\n" + "x = 1\n" * 20)
    (repo / "pkg" / "model.py").rename(repo / "pkg" / "net.py")
    (repo / "weights.bin").write_bytes(bytes(range(255, -1, -1)))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    b = _record(repo, sys.executable, "train.py")
    patch = _patch(repo, a, b)
    expected = _git(repo, "diff", "--no-color", "--no-ext-diff", "-M", "HEAD~1", "HEAD")
    assert patch == expected
    assert "Binary files a/weights.bin and b/weights.bin differ" in patch
    assert ".git/" not in patch and "objects/" not in patch
    assert _only_sources(patch) == ["pkg/net.py", "train.py", "weights.bin"]


def test_diff_covers_uncommitted_and_untracked_code(repo: Path) -> None:
    a = _record(repo, sys.executable, "train.py")
    (repo / "train.py").write_text("print('dirty')\n" + "x = 1\n" * 20)
    (repo / "helper.py").write_text("HELP = 1\n")
    (repo / "blob.dat").write_bytes(b"\x00\x01\x02")
    b = _record(repo, sys.executable, "train.py")
    (repo / "helper.py").write_text("HELP = 2\n")
    c = _record(repo, sys.executable, "train.py")
    patch = _patch(repo, a, b)
    assert _only_sources(patch) == ["blob.dat", "helper.py", "train.py"]
    assert "-print('hello')\n+print('dirty')\n" in patch
    assert "new file mode 100644" in patch and "+HELP = 1" in patch
    assert "Binary files /dev/null and b/blob.dat differ" in patch
    # Two dirty runs: only what changed between them.
    patch = _patch(repo, b, c)
    assert _only_sources(patch) == ["helper.py"]
    assert "-HELP = 1\n+HELP = 2\n" in patch
    # The human view prints the same patch and nothing from .git.
    text = run_ledger("diff", b, c, cwd=repo, COLUMNS="200").stdout
    assert "diff --git a/helper.py b/helper.py" in text and ".git" not in text


def test_diff_outside_git(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "train.py").write_text("print(1)\n")
    init_ledger(root)
    a = _record(root, sys.executable, "train.py")
    (root / "train.py").write_text("print(2)\n")
    b = _record(root, sys.executable, "train.py")
    patch = _patch(root, a, b)
    assert _only_sources(patch) == ["train.py"]
    assert "-print(1)\n+print(2)\n" in patch


def test_diff_says_when_code_cannot_be_rebuilt(repo: Path, tmp_path: Path) -> None:
    a = _record(repo, sys.executable, "train.py")
    (repo / "train.py").write_text("print('two')\n")
    _git(repo, "commit", "-qam", "two")
    b = _record(repo, sys.executable, "train.py")
    # The commit of run a is gone from the repository: say so, do not crash.
    _git(repo, "reset", "-q", "--hard", "HEAD")
    _git(repo, "checkout", "-q", "--orphan", "fresh")
    _git(repo, "commit", "-qm", "fresh")
    _git(repo, "branch", "-D", "master" if "master" in _git(repo, "branch") else "main")
    _git(repo, "reflog", "expire", "--expire=now", "--all")
    _git(repo, "gc", "-q", "--prune=now")
    r = run_ledger("diff", a, b, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "the code of run a cannot be rebuilt" in json.loads(r.stdout)["code"]["patch"]
