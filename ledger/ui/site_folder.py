"""The one rule for a folder ``ledger`` fills and may later replace (``ledger report -o DIR``).

A folder is written only when it is new, empty, or holds exactly what an earlier write left
there: a marker file (``.ledger-site.json``) names every file ledger wrote with its SHA-256, and
the folder is replaced only while it holds those files unchanged and nothing else. Anything
else (a user's folder, a report someone added notes to or edited) is refused with exit 2 and
left untouched, byte for byte: nothing here removes a file the marker does not name, and nothing
follows a symbolic link.

The new content is built in a hidden folder inside the target and moved into place only once
whole, so a write that fails leaves the earlier content as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import UsageError

__all__ = ["MARKER", "write_site"]

MARKER = ".ledger-site.json"
_KIND = "ledger-site"
_HINT = "give a new or empty folder with -o; nothing in it was changed"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _contents(root: Path, skip: str | None = None) -> tuple[dict[str, str], list[str]]:
    """Relative path -> SHA-256 of every regular file under ``root``, and whatever else is there
    (links, devices, FIFOs: never ours), leaving out the top-level entry ``skip``. Links are not
    followed."""
    files: dict[str, str] = {}
    other: list[str] = []
    for top, dirs, names in os.walk(root):
        if top == str(root) and skip is not None and skip in dirs:
            dirs.remove(skip)
        for name in list(dirs):
            if os.path.islink(os.path.join(top, name)):
                dirs.remove(name)
                other.append(os.path.relpath(os.path.join(top, name), root))
        for name in names:
            path = Path(top, name)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISREG(os.lstat(path).st_mode):
                files[rel] = _digest(path)
            else:
                other.append(rel)
    return files, other


def _read_marker(folder: Path) -> dict[str, str] | None:
    path = folder / MARKER
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 64 << 20:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("kind") != _KIND:
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        return None
    return files


def _replaceable(folder: Path, what: str, skip: str | None = None) -> dict[str, str]:
    """The files an earlier write left in ``folder`` (none for an empty folder), or UsageError
    when the folder holds anything else (``skip``: our own hidden build folder)."""
    if folder.is_symlink() or not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder", hint=_HINT)
    if not [n for n in os.listdir(folder) if n != skip]:
        return {}
    written = _read_marker(folder)
    if written is None:
        raise UsageError(
            f"{folder} is not empty and is not a ledger {what} (it has no {MARKER})",
            hint=_HINT,
        )
    present, other = _contents(folder, skip)
    present.pop(MARKER, None)
    extra = sorted(set(present) - set(written)) + sorted(other)
    changed = sorted(k for k, v in present.items() if k in written and written[k] != v)
    if extra or changed:
        shown = (extra + changed)[:5]
        more = " ..." if len(extra) + len(changed) > 5 else ""
        why = "files ledger did not write" if extra else "files changed since ledger wrote them"
        raise UsageError(
            f"{folder} holds {why} ({', '.join(shown)}{more}); nothing in it was changed",
            hint="move them away, or give a new or empty folder with -o",
        )
    return {k: v for k, v in written.items() if k in present}


def _remove_written(folder: Path, written: dict[str, str]) -> None:
    """Delete the files of an earlier write, then the folders they leave empty."""
    dirs: set[Path] = set()
    for rel in written:
        path = folder / rel
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != folder:
            dirs.add(parent)
            parent = parent.parent
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty: something not ours is there; leave it
            d.rmdir()


def write_site(out: Path, build: Callable[[Path], object], *, what: str = "report") -> list[Path]:
    """Fill ``out`` with what ``build(folder)`` writes into an empty folder, and return the
    files, as paths under ``out``. ``out`` must be new, empty, or an earlier write's folder
    (see the module docstring); a marker naming the files is written last."""
    out = Path(os.path.abspath(out))
    created = not os.path.lexists(out)
    if created:
        try:
            out.mkdir(parents=True)
        except FileExistsError:
            created = False
    written = _replaceable(out, what)
    tmp = Path(tempfile.mkdtemp(prefix=".ledger-site-", dir=out))
    try:
        build(tmp)
        files, _ = _contents(tmp)
        (tmp / MARKER).write_text(
            json.dumps({"kind": _KIND, "files": files}, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        # Looked at again right before anything is removed: only what was vetted goes.
        if _replaceable(out, what, skip=tmp.name) != written:
            raise UsageError(f"{out} changed while the {what} was written; nothing was replaced")
        _remove_written(out, written)
        for entry in sorted(os.listdir(tmp), key=lambda n: n == MARKER):
            os.rename(tmp / entry, out / entry)  # the marker last
        tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # only the hidden folder made above
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    return [out / rel for rel in sorted(files)]
