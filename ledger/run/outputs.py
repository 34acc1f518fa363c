"""The files a run recorded as its outputs (``ledger record -o PATH``), by the path the run
wrote them at: what ``ledger gate RUN:out/model.pt`` and the read API's ``run(id).outputs``
name. Each tree is read through the object store (re-hashed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ..errors import UsageError
from ..store import Store

__all__ = ["OutputFile", "find_output", "output_files"]


@dataclass(frozen=True)
class OutputFile:
    path: str  # as the run wrote it, under its --output (``out/model.pt``)
    oid: str  # the file's bytes
    size: int
    type: str  # "file" or "symlink"
    output: str  # the --output it was captured under


def output_files(store: Store, run: dict[str, Any]) -> list[OutputFile]:
    """Every file of every ``--output`` of a run record (its JSON), in record order. A file
    output's tree holds that one file under its own name; a folder's, its files below it."""
    out: list[OutputFile] = []
    for o in run.get("outputs") or []:
        if not isinstance(o, dict) or not isinstance(o.get("tree"), str):
            continue
        base = str(o.get("path") or "")
        tree = store.get_json(o["tree"])
        entries = tree.get("entries") if isinstance(tree, dict) else None
        entries = [e for e in entries or [] if isinstance(e, dict)]
        name = PurePosixPath(base).name
        single = len(entries) == 1 and entries[0].get("path") == name
        for e in entries:
            rel = str(e.get("path"))
            path = base if single else f"{base.rstrip('/')}/{rel}"
            size, kind = int(e.get("size") or 0), str(e.get("type"))
            out.append(OutputFile(_norm(path), str(e.get("oid")), size, kind, base))
    return out


def _norm(path: str) -> str:
    parts = [p for p in PurePosixPath(path).parts if p not in (".", "")]
    return "/".join(parts)


def find_output(store: Store, run: dict[str, Any], path: str) -> OutputFile:
    """The output file ``path`` (as the run wrote it) of a run record; UsageError listing
    what the run did record when it holds no such file."""
    files = output_files(store, run)
    want = _norm(path)
    for f in files:
        if f.path == want:
            if f.type != "file":
                raise UsageError(f"output {path!r} of run {run.get('run_id')} is a {f.type}")
            return f
    shown = ", ".join(f.path for f in files[:10]) or "none"
    raise UsageError(
        f"run {run.get('run_id')} recorded no output file {path!r}",
        hint=f"its output files: {shown}" + (" ..." if len(files) > 10 else ""),
    )
