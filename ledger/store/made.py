"""What ledger itself wrote outside its own folder: report sites, HTML reports, exported
packages, path remotes. They are ledger's output, not the project's code: code capture leaves
them out of a run's untracked files and ``--require-clean`` does not count them.

A folder ledger fills carries its writer's marker (``.ledger-site.json`` of a report site,
``ledgerremote.json`` of a path remote): ``FOLDER_MARKERS`` names them, and a folder holding
one is ledger's wherever it is, whichever ledger wrote it; ``ledger report``, a look at the
ledger, writes nothing into it. The other writers (packages, audit and gate reports, pushes to
a path remote, so that git is not even asked to walk it) call ``note_made`` once their file or
folder is in place; it appends one line,
``{"path", "kind", "size", "mtime_ns"}`` (canonical JSON), to ``made.jsonl`` in the ledger's
folder. ``made_paths`` reads the list back (a regular file of bounded size,
``ledger.store.safe_read``) and keeps what is still ledger's: a folder while it holds the
marker its writer leaves there (``.ledger-site.json``, ``ledgerremote.json``), a file while
its size and mtime are those it had when ledger wrote it (a file the user then edited, or
replaced, is theirs). The list only names paths; nothing here deletes or reads them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .safe_read import NotRegularError, read_regular

__all__ = ["FOLDER_MARKERS", "MADE_FILE", "Made", "MadeKind", "made_paths", "note_made"]

MADE_FILE = "made.jsonl"
_MAX_BYTES = 16 << 20
_COMPACT_AT = 1 << 20  # the list is rewritten with one line per path beyond this size

MadeKind = Literal["site", "remote", "package", "report"]
# A folder is still ledger's while its writer's marker is there.
_FOLDER_MARKERS: dict[str, str] = {"site": ".ledger-site.json", "remote": "ledgerremote.json"}
FOLDER_MARKERS = frozenset(_FOLDER_MARKERS.values())
# The one line ``note_made`` writes (canonical JSON: keys sorted, no spaces). Lines are picked
# out by this pattern in one pass over the bytes, so a list padded with lines that are not notes
# (blank, torn, planted: up to the 16 MiB read) costs a scan, not a parse and a raised error per
# line (16 MiB of blank lines took 52 s of CPU on every code capture that way).
_NOTE = re.compile(
    rb'^\{"kind":"[a-z]+","mtime_ns":-?[0-9]+,"path":"(?:[^"\\\n]|\\[^\n])*","size":[0-9]+\}$',
    re.MULTILINE,
)


@dataclass(frozen=True)
class Made:
    path: Path  # absolute, as written
    kind: str
    is_dir: bool


def note_made(ledger_root: Path, path: Path, kind: MadeKind) -> None:
    """Remember that ledger wrote ``path`` (a file, or a folder with its marker). Never fails
    the write it follows: a ledger that cannot be written to (read-only) only loses the
    note, and code capture then treats the path as any other file."""
    with contextlib.suppress(OSError):
        full = Path(os.path.abspath(path))
        st = os.stat(full)
        line = {"path": str(full), "kind": kind, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        data = (json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n").encode()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(Path(ledger_root) / MADE_FILE, flags, 0o644)
        try:
            os.write(fd, data)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > _COMPACT_AT:
            _compact(Path(ledger_root))


def _compact(ledger_root: Path) -> None:
    """Rewrite the list with the newest line of each path (a path remote pushed to at every
    run adds a line each time)."""
    from .atomic import atomic_write_bytes

    lines = _latest(ledger_root)
    data = b"".join(
        (json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n").encode()
        for e in lines.values()
    )
    atomic_write_bytes(ledger_root / MADE_FILE, data, ledger_root / "tmp")


def _still_ledgers(path: Path, kind: str, size: object, mtime_ns: object) -> bool:
    """Whether ``path`` still holds what ledger wrote there."""
    marker = _FOLDER_MARKERS.get(kind)
    if marker is not None:
        return os.path.isfile(path / marker) and not os.path.islink(path)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_size == size and st.st_mtime_ns == mtime_ns


def _latest(ledger_root: Path) -> dict[str, dict[str, object]]:
    """The newest line of each path in the list."""
    try:
        data = read_regular(Path(ledger_root) / MADE_FILE, _MAX_BYTES)
    except (OSError, NotRegularError):
        return {}
    latest: dict[str, dict[str, object]] = {}
    for m in _NOTE.finditer(data):
        try:
            entry = json.loads(m.group())
        except ValueError:
            continue  # an escape JSON does not know: a damaged line names nothing
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            latest[entry["path"]] = entry
    return latest


def made_paths(ledger_root: Path) -> list[Made]:
    """The files and folders ledger wrote that still hold what it wrote (newest note wins)."""
    out = []
    for name, entry in _latest(Path(ledger_root)).items():
        kind = str(entry.get("kind", ""))
        path = Path(name)
        if _still_ledgers(path, kind, entry.get("size"), entry.get("mtime_ns")):
            out.append(Made(path, kind, kind in _FOLDER_MARKERS))
    return out
