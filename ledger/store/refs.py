"""Named refs (``runs/<id>``, ``checkpoints/<run>/latest``...): small files holding one object id.

Refs are updated only through ``Store.set_ref``/``Store.delete_ref``, which append to the
hash-chained log first (the commit point) and then replace the ref file atomically.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from .._hashing import OID_RE
from ..errors import CorruptObjectError, UsageError
from .safe_read import read_regular

__all__ = ["RefStore", "check_ref_name"]

# A ref file holds one id and a newline (68 bytes); more is damage, never read whole.
MAX_REF = 1024
_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._=+-]{0,199}$")


def check_ref_name(name: str) -> str:
    """Refuse names that could escape the refs folder or clash with temp files."""
    parts = name.split("/")
    if not name or any(not _COMPONENT.match(p) or p in {".", ".."} for p in parts):
        raise UsageError(
            f"invalid ref name {name!r}",
            hint="use '/'-separated parts of letters, digits, '_', '-', '.', not starting with '.'",
        )
    return name


class RefStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._listed: dict[str, tuple[tuple[int, int], list[str]]] = {}

    def path_of(self, name: str) -> Path:
        return self.root.joinpath(*check_ref_name(name).split("/"))

    def get(self, name: str) -> str | None:
        try:
            # A damaged ref may hold any bytes: decode leniently so the id check reports it.
            raw = read_regular(self.path_of(name), MAX_REF)
        except (FileNotFoundError, NotADirectoryError):
            return None
        text = raw.decode("ascii", errors="replace").strip()
        if not OID_RE.match(text):
            raise CorruptObjectError(text, f"ref {name} holds {text!r}, which is not an object id")
        return text

    def iter(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        root = str(self.root)
        for name in self.names(prefix):
            try:
                raw = read_regular(os.path.join(root, name), MAX_REF)  # (no Path a ref)
            except (FileNotFoundError, NotADirectoryError):
                continue  # deleted since it was listed
            yield name, raw.decode("ascii", errors="replace").strip()

    def names(self, prefix: str = "") -> list[str]:
        """Ref names starting with ``prefix``, sorted, without reading the refs: only the
        folder a ``dir/`` prefix names is walked. The listing of a folder without subfolders is
        kept while the folder's mtime stays what it was (``ls`` and ``show`` ask several times,
        ``ledger ui`` on every page), unless it was changed within a second of being listed:
        a change in the same clock tick would leave the mtime as it was."""
        top = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = self.root.joinpath(*top.split("/")) if top else self.root
        try:
            st = os.stat(base)
        except (FileNotFoundError, NotADirectoryError):
            return []
        if not stat.S_ISDIR(st.st_mode):
            return []
        stamp = (st.st_ino, st.st_mtime_ns)
        kept = self._listed.get(prefix)
        if kept is not None and kept[0] == stamp:
            return list(kept[1])
        started = time.time_ns()
        out: list[str] = []
        nested = False
        stack = [(base, f"{top}/" if top else "")]
        while stack:
            folder, rel = stack.pop()
            with os.scandir(folder) as entries:
                for e in entries:
                    name = e.name
                    if name.startswith("."):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        nested = True
                        stack.append((Path(e.path), f"{rel}{name}/"))
                    elif not e.is_dir():  # a link to a folder is not walked into
                        # A FIFO or a link to a file is listed: reading it refuses it by name.
                        out.append(rel + name)
        if prefix != (f"{top}/" if top else ""):  # part of a folder's names
            out = [n for n in out if n.startswith(prefix)]
        if nested:
            out.sort(key=lambda n: n.split("/"))  # the order of their paths
            return out
        out.sort()  # one folder: the same order
        if st.st_mtime_ns < started - 1_000_000_000:
            self._listed[prefix] = (stamp, out)
        return list(out)
