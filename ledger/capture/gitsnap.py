"""What git knows about a working tree: HEAD, branch, remotes, the patch, untracked files.

``git`` itself finds the repository, reads HEAD and config, writes the patch and lists files:
only it produces a binary-safe patch that ``git apply`` takes back exactly, and a few ``git``
calls cost less than importing gitpython (~0.15 s of every ``ledger record``).
Every command runs with ``GIT_OPTIONAL_LOCKS=0`` so capture never rewrites the user's index.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..errors import LedgerError, UsageError

__all__ = [
    "DIFF_OPTIONS",
    "HeadInfo",
    "PatchFile",
    "Repo",
    "dirty_paths",
    "gitlinks",
    "head_info",
    "ignore_pattern",
    "is_ignored",
    "open_repo",
    "redact_url",
    "run_git",
    "untracked_paths",
    "write_patch",
]

# Pinned so that user config (diff.noprefix, diff.external, color.diff, diff.relative,
# textconv drivers) cannot change the patch. Submodules are recorded separately.
DIFF_OPTIONS = (
    "diff",
    "--binary",
    "--full-index",
    "-M",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--ignore-submodules=all",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def run_git(
    where: Path,
    *args: str,
    error: type[LedgerError] = UsageError,
    check: bool = True,
    stdout: int | object = subprocess.PIPE,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C where args…``; a failure becomes ``error`` carrying git's own message."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(where), *args],
            stdout=stdout,  # type: ignore[arg-type]
            stderr=subprocess.PIPE,
            input=input,
            env=_env(),
            check=False,
        )
    except FileNotFoundError:
        raise error("git is not installed or not on PATH", hint="install git") from None
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise error(f"`git {' '.join(args[:2])}` failed in {where}: {msg[-1] if msg else ''}")
    return proc


# What git says outside a working tree: not a repository at all, or a bare one / inside .git.
_NOT_A_WORK_TREE = ("not a git repository", "must be run in a work tree")


@dataclass(frozen=True)
class Repo:
    """A repository with a working tree (what ``open_repo`` found)."""

    working_tree_dir: Path

    def close(self) -> None:
        """Nothing to release; kept so callers read like they did with gitpython."""


def open_repo(cwd: Path) -> Repo | None:
    """The repository with a working tree that holds ``cwd``, or None."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"],
            capture_output=True,
            env={**_env(), "LC_ALL": "C", "LANGUAGE": ""},  # messages matched below
            check=False,
        )
    except FileNotFoundError:
        if any((d / ".git").exists() for d in (cwd, *cwd.parents)):
            raise UsageError("git is not installed or not on PATH", hint="install git") from None
        return None
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    if proc.returncode != 0 or not top:
        err = proc.stderr.decode("utf-8", "replace").strip()
        if not top and proc.returncode != 0 and not any(m in err for m in _NOT_A_WORK_TREE):
            # A repository git refuses to read (dubious ownership, a broken config): say so,
            # rather than snapshot it as a plain folder.
            raise UsageError(f"`git rev-parse` failed in {cwd}: {err.splitlines()[-1]}")
        return None  # not a repository, a bare one, or inside .git
    return Repo(Path(top))


def redact_url(url: str) -> str:
    """Hide credentials in a remote URL: ``https://user:tok@host`` -> ``https://user:***@host``.

    A user name alone over http(s) that looks like a token (long, no dots) is hidden too.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.netloc or "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, has_password, _ = userinfo.partition(":")
    if has_password:
        userinfo = f"{user}:***"
    elif parts.scheme in ("http", "https") and len(user) >= 20 and "." not in user:
        userinfo = "***"
    else:
        return url
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{hostport}"))


@dataclass(frozen=True)
class HeadInfo:
    commit: str | None
    branch: str | None
    object_format: str
    remotes: dict[str, str]


def head_info(repo: Repo, root: Path) -> HeadInfo:
    # git itself resolves HEAD: it reads sha256 repositories, which gitpython did not. The three
    # questions are independent: asked at once, they cost one git start-up of latency, not three
    # (every `ledger record` asks them before launch). Plain threads: concurrent.futures costs
    # an import of its own before every launch.
    pattern = r"^(remote\..*\.url|extensions\.objectformat)$"
    questions = (
        ("rev-parse", "--verify", "--quiet", "HEAD^{commit}"),
        ("symbolic-ref", "--quiet", "HEAD"),
        ("config", "-z", "--get-regexp", pattern),
    )
    proc, ref, conf = _ask_at_once(root, questions)
    commit = proc.stdout.decode().strip() if proc.returncode == 0 else None
    branch: str | None = None
    if ref.returncode == 0:  # not detached (an unborn branch included)
        branch = ref.stdout.decode().strip().removeprefix("refs/heads/")
    out = conf.stdout
    remotes: dict[str, str] = {}
    fmt = "sha1"
    for item in out.decode("utf-8", "replace").split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() == "extensions.objectformat":
            fmt = value.strip().lower()
        elif key.startswith("remote.") and key.lower().endswith(".url"):
            remotes[key[len("remote.") : -len(".url")]] = redact_url(value)  # the last one wins
    return HeadInfo(commit=commit, branch=branch, object_format=fmt, remotes=remotes)


def _ask_at_once(
    root: Path, questions: tuple[tuple[str, ...], ...]
) -> list[subprocess.CompletedProcess[bytes]]:
    """``run_git(root, *q, check=False)`` for each question, in threads; the first error
    (git missing) is raised as the call would raise it."""
    import threading

    answers: list[subprocess.CompletedProcess[bytes] | BaseException | None] = [None] * len(
        questions
    )

    def ask(i: int) -> None:
        try:
            answers[i] = run_git(root, *questions[i], check=False)
        except BaseException as e:  # handed to the caller's thread below
            answers[i] = e

    threads = [
        threading.Thread(target=ask, args=(i,), name="ledger-git", daemon=True)
        for i in range(len(questions))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = []
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
        if answer is None:
            raise RuntimeError("a git query thread ended without an answer")
        out.append(answer)
    return out


def empty_tree(root: Path) -> str:
    """The id of the empty tree in this repository's hash (sha1 or sha256)."""
    out = run_git(root, "hash-object", "-t", "tree", "--stdin", input=b"").stdout
    return out.decode().strip()


@dataclass(frozen=True)
class PatchFile:
    path: Path
    files: int
    size: int


def write_patch(root: Path, base: str, out: Path) -> PatchFile:
    """Write the diff from ``base`` (a commit or the empty tree) to the working tree into ``out``.

    It covers the index and the working tree of tracked files alike: staged and unstaged edits,
    additions, deletions, renames, mode changes and binary files.
    """
    with open(out, "wb") as f:
        run_git(root, *DIFF_OPTIONS, base, "--", stdout=f)
    files = 0
    with open(out, "rb") as f:
        for line in f:
            # Text hunk lines start with ' ', '+', '-' or '\'; base85 lines hold no spaces.
            if line.startswith(b"diff --git "):
                files += 1
    return PatchFile(path=out, files=files, size=out.stat().st_size)


def _split_z(data: bytes) -> list[str]:
    return [os.fsdecode(p) for p in data.split(b"\0") if p]


def untracked_paths(root: Path, skip_dirs: Sequence[str] = ()) -> list[str]:
    """Files git does not track and does not ignore; nested repositories end with ``/``.

    ``skip_dirs`` are directories (relative to ``root``) git leaves out as if ignored: it does
    not even walk them, which matters for a ledger inside the tree that grows run after run.
    """
    excludes = [f"--exclude=/{ignore_pattern(d)}/" for d in skip_dirs]
    out = run_git(root, "ls-files", "-z", "--others", "--exclude-standard", *excludes).stdout
    return _split_z(out)


def ignore_pattern(path: str) -> str:
    """``path`` as a gitignore pattern that matches that name only (glob characters escaped)."""
    escaped = re.sub(r"([\\*?\[\]])", r"\\\1", path.strip("/"))
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def is_ignored(root: Path, path: str) -> bool:
    """Whether git ignores ``path`` (relative to ``root``) by .gitignore and the like."""
    proc = run_git(root, "check-ignore", "-q", "--", path, check=False)
    return proc.returncode == 0


def ignored_among(root: Path, paths: Sequence[str]) -> set[str]:
    """Those of ``paths`` (relative to ``root``) that git ignores, in one ``check-ignore``."""
    if not paths:
        return set()
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    proc = run_git(root, "check-ignore", "-z", "--stdin", input=data, check=False)
    return set(_split_z(proc.stdout)) if proc.returncode in (0, 1) else set()


def gitlinks(root: Path) -> dict[str, str]:
    """Submodule path -> commit recorded in the index."""
    out = run_git(root, "ls-files", "-z", "--stage").stdout
    links: dict[str, str] = {}
    for rec in out.split(b"\0"):
        if rec.startswith(b"160000 "):
            meta, _, path = rec.partition(b"\t")
            links[os.fsdecode(path)] = meta.split()[1].decode()
    return links


def dirty_paths(root: Path) -> list[str]:
    """``git status`` short lines ('XY path') for everything that differs, untracked included."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
    lines: list[str] = []
    recs = out.split(b"\0")
    i = 0
    while i < len(recs):
        rec = recs[i]
        i += 1
        if not rec:
            continue
        status, path = rec[:2].decode(), os.fsdecode(rec[3:])
        if status[0] in "RC":
            i += 1  # the rename source follows as its own record
        lines.append(f"{status.strip()} {path}")
    return lines
