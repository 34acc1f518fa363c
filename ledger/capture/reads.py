"""The files a recorded program read, and which of them a replay will not have.

The start-up hook (``ledger/_hook/reads.py``) appends each path a Python process of the run
opened for reading to ``reads/<pid>.txt`` in the run's staging directory. At seal ``collect``
reads those lists back (regular files of bounded size, ``ledger.store.safe_read``) and
``classify`` sorts every path that is still a regular file: in the code snapshot (tracked, or an
untracked file that was stored), under an ``--input``, written by the run itself (changed after
launch), or one a replay will not have: gitignored, left out of the snapshot by a limit, or
outside the repository. ``missing_message`` names the last kind with the one-line fix.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records.plain import plain
from ..store import Store
from ..store.safe_read import NotRegularError, read_regular
from . import gitsnap
from .trees import describe

__all__ = [
    "MAX_LISTED",
    "NOT_REPLAYED",
    "ReadsFound",
    "classify",
    "collect",
    "missing_message",
    "missing_note",
]

MAX_LISTED = 20_000  # paths kept in the Reads record; the count stays exact
_MAX_LIST_BYTES = 256 << 20  # one process's list
NOT_REPLAYED = ("gitignored", "left-out", "outside")
_WHY = {
    "gitignored": "gitignored",
    "left-out": "not in the code snapshot",
    "outside": "outside the repository",
}


def _unescape(line: bytes) -> str:
    out = bytearray()
    i = 0
    while i < len(line):
        c = line[i]
        if c == 0x5C and i + 1 < len(line):  # backslash
            out += b"\n" if line[i + 1] == ord("n") else line[i + 1 : i + 2]
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out).decode("utf-8", "surrogateescape")


def collect(staging: Path) -> tuple[list[str], list[str]]:
    """Every absolute path the run's processes read (sorted, distinct), and notes."""
    folder = staging / "reads"
    if not folder.is_dir():
        return [], []
    seen: set[str] = set()
    notes: list[str] = []
    for entry in sorted(folder.iterdir()):
        if not entry.name.endswith(".txt"):
            continue
        try:
            data = read_regular(entry, _MAX_LIST_BYTES)
        except (OSError, NotRegularError) as e:
            notes.append(f"a list of files read was not read ({entry.name}: {e})")
            continue
        for line in data.split(b"\n"):
            if line:
                seen.add(_unescape(line) if b"\\" in line else os.fsdecode(line))
    kept = sorted(p for p in seen if _utf8(p))
    if len(kept) < len(seen):  # records hold UTF-8 only
        notes.append(f"files read whose names are not UTF-8, not listed: {len(seen) - len(kept)}")
    return kept, notes


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class ReadsFound:
    files: list[dict[str, Any]] = field(default_factory=list)  # ReadFile JSON, sorted by path
    missing: list[dict[str, Any]] = field(default_factory=list)  # those a replay will not have
    abspaths: list[str] = field(default_factory=list)  # of ``files``, as they were read
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The Reads record's JSON (``ledger.records.reads.Reads``)."""
        return plain(
            "reads",
            files=self.files[:MAX_LISTED],
            n_files=len(self.files),
            truncated=len(self.files) > MAX_LISTED,
            notes=list(self.notes),
        )


def _under(path: str, bases: list[str]) -> bool:
    """Whether ``path`` is one of ``bases`` or lies below one (names compared, not resolved)."""
    for b in bases:
        if path.startswith(b) and (len(path) == len(b) or path[len(b)] == "/" or b == "/"):
            return True
    return False


def _tree_paths(store: Store, oid: str | None) -> set[str]:
    if not oid:
        return set()
    try:
        tree = store.get_json(oid)
    except Exception:
        return set()
    return {e["path"] for e in tree.get("entries", []) if isinstance(e, dict) and "path" in e}


def classify(
    paths: list[str],
    *,
    code: dict[str, Any],
    store: Store,
    cwd: Path,
    inputs: list[str],
    started: float,
) -> ReadsFound:
    """Sort the paths read by what a replay makes of them. ``code``: the run's code record;
    ``inputs``: the absolute paths of its ``--input``s; ``started``: the launch time."""
    found = ReadsFound()
    root = os.path.realpath(str(code.get("root") or cwd))
    cwd_s = os.path.realpath(cwd)
    store_root = os.path.realpath(store.root)
    input_bases = [*inputs, *(os.path.realpath(p) for p in inputs)]
    in_repo = bool(code.get("in_repo"))
    snapshot = _tree_paths(store, code.get("untracked") if in_repo else code.get("snapshot"))
    tracked: set[str] | None = None
    submodules = [str(s.get("path", "")) for s in code.get("submodules", [])]
    unstored: list[tuple[int, str]] = []  # entries to ask git about: ignored, or left out
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone (a temporary file), or never there (a failed open)
        if not stat.S_ISREG(st.st_mode):
            continue
        # The hook's paths are normalised, not resolved: a symlink is resolved only when the
        # name alone does not place the file (realpath costs a system call per component).
        inside: str | None = path if _under(path, [root]) else None
        real = path if inside is not None else os.path.realpath(path)
        if inside is None and _under(real, [root]):
            inside = real
        if _under(path, [store_root]) or _under(real, [store_root]):
            continue
        status: str
        if _under(path, input_bases) or _under(real, input_bases):
            status = "input"
        elif st.st_mtime >= started:
            status = "written"
        elif inside is None:
            status = "outside"
        else:
            rel = inside[len(root) + 1 :] if root != "/" else inside[1:]
            if in_repo and tracked is None:
                tracked = _tracked(Path(root))
            in_code = rel in snapshot or (tracked is not None and rel in tracked)
            if in_code or _under(rel, submodules):
                status = "code"
            else:
                status = "left-out"
                unstored.append((len(found.files), rel))
        if inside is None:
            given = path
        elif cwd_s == root:
            given = inside[len(root) + 1 :] if root != "/" else inside[1:]
        else:
            given = os.path.relpath(inside, cwd_s)
        found.files.append({"path": given, "status": status})  # plain("read_file")
        found.abspaths.append(path)
    if in_repo and unstored:
        ignored = gitsnap.ignored_among(Path(root), [rel for _, rel in unstored])
        for i, rel in unstored:
            if rel in ignored:
                found.files[i]["status"] = "gitignored"
    for entry, path in zip(found.files, found.abspaths, strict=True):
        if entry["status"] in NOT_REPLAYED:
            found.missing.append({**entry, "abspath": path})
    found.files.sort(key=lambda f: f["path"])
    found.missing.sort(key=lambda f: f["path"])
    return found


def _tracked(root: Path) -> set[str]:
    try:
        out = gitsnap.run_git(root, "ls-files", "-z", "--cached").stdout
    except Exception:
        return set()
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def missing_message(missing: list[dict[str, Any]], limit: int = 10) -> list[str]:
    """Lines for the terminal: what a replay will not have, and how to give it to it."""
    if not missing:
        return []
    n = len(missing)
    lines = [
        f"the run read {n} file{'s' if n != 1 else ''} that a replay will not have "
        "(not in the code snapshot, not an --input):"
    ]
    for m in missing[:limit]:
        lines.append(f"  {m['path']} ({_WHY[m['status']]}): add --input {_quote(m['path'])}")
    if n > limit:
        lines.append(f"  ... and {n - limit} more (`ledger show RUN` lists them)")
    lines.append("or record with --auto-inputs to store every one of them as an input")
    return lines


def missing_note(missing: list[dict[str, Any]]) -> str:
    """The run's note naming them (``ledger show`` prints notes)."""
    items = [f"{m['path']} ({_WHY[m['status']]})" for m in missing]
    return describe(
        "files the run read that a replay will not have; declare them with --input PATH or "
        "record with --auto-inputs",
        items,
    )


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)
