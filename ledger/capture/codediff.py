"""The source changes between two recorded code snapshots, as ``git diff`` shows them.

Each snapshot (commit + patch + untracked files, or a plain tree) is rebuilt in a temporary
directory and its files are written, with ``git add --all --force`` through a private index,
into one scratch repository; the patch is ``git diff`` between the two trees there. Only the
files the run had are compared: never ``.git`` internals of the rebuilt checkouts, and a
submodule is one ``Subproject commit`` line, as in the user's own ``git diff``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ..errors import LedgerError, ReplayError
from ..records.base import record_from_json
from ..records.code import CodeSnapshot
from ..store import Store
from .materialize import materialize_code

__all__ = ["code_patch"]

# Pinned like the recorded patch's options (gitsnap.DIFF_OPTIONS), for people: no --binary.
_DIFF = (
    "diff",
    "-M",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
# Recorded bytes are compared as they are: no line-ending conversion, no hints on stderr.
_CONFIG = (
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "advice.addEmbeddedRepo=false",
)


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(["git", *_CONFIG, *args], cwd=cwd, env=env, capture_output=True)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ReplayError(f"`git {args[0]}` failed: {err[-1] if err else proc.returncode}")
    return proc.stdout.decode("utf-8", "replace")


def _tree(store: Store, oid: str, tmp: Path, side: str, scratch: Path) -> str:
    """Rebuild snapshot ``oid`` in ``tmp/side`` and write its files as a tree in ``scratch``."""
    snap = record_from_json(store.get_json(oid), CodeSnapshot)
    work = tmp / side
    materialize_code(snap, store, work)
    env = dict(os.environ)
    for key in (
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CEILING_DIRECTORIES",
    ):
        env.pop(key, None)
    env.update(
        GIT_DIR=str(scratch),
        GIT_WORK_TREE=str(work),
        GIT_INDEX_FILE=str(tmp / f"{side}.index"),
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
    )
    _git(["add", "--all", "--force", "--", "."], work, env)
    return _git(["write-tree"], work, env).strip()


def code_patch(store: Store, a: str, b: str, *, max_chars: int = 200_000) -> str:
    """``git diff`` from code snapshot ``a`` to ``b`` (both CodeSnapshot ids); empty when the
    files are the same. A snapshot that cannot be rebuilt is said in the text."""
    with tempfile.TemporaryDirectory(prefix="ledger-diff-") as name:
        tmp = Path(name)
        scratch = tmp / "scratch.git"
        _git(["init", "--quiet", "--bare", str(scratch)], tmp, dict(os.environ))
        trees = []
        for side, oid in (("a", a), ("b", b)):
            try:
                trees.append(_tree(store, oid, tmp, side, scratch))
            except LedgerError as e:
                return f"(the code of run {side} cannot be rebuilt: {e.message})\n"
        env = dict(os.environ, GIT_DIR=str(scratch))
        text = _git([*_DIFF, trees[0], trees[1]], tmp, env)
    return text if len(text) <= max_chars else text[:max_chars] + "\n… (truncated)\n"
