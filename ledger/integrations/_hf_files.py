"""A Trainer checkpoint directory as a ledger checkpoint and back (imports torch, not
``transformers``).

Each file becomes a ``uint8`` tensor under ``files/<relative path>`` (content-addressed, so a
file that did not change between saves is stored once); ``trainer_state.json`` is also kept as
JSON in the checkpoint's state, so steps and logged values can be read without the files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import UsageError

__all__ = ["capture", "restore"]

FORMAT = "hf-trainer-checkpoint/1"


def capture(
    folder: Path,
    *,
    step: int,
    store: Any = None,
    run_id: str | None = None,
    keep_last: int | None = None,
) -> Any:
    """Save every file under ``folder`` as ledger checkpoint ``step``; returns its info."""
    import torch

    from ..torch.checkpoint import save_checkpoint

    files: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            rel = path.relative_to(folder).as_posix()
            files[rel] = (
                torch.frombuffer(bytearray(data), dtype=torch.uint8)
                if data
                else (torch.empty(0, dtype=torch.uint8))
            )
    trainer_state: Any = None
    state_file = folder / "trainer_state.json"
    if state_file.is_file():
        trainer_state = json.loads(state_file.read_text(encoding="utf-8"))
    state = {
        "files": dict(sorted(files.items())),
        "folder": folder.name,
        "format": FORMAT,
        "trainer_state": trainer_state,
    }
    return save_checkpoint(
        state,
        step=step,
        store=store,
        run_id=run_id,
        keep_last=keep_last,
        note=f"transformers {folder.name}",
    )


def _safe(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        raise UsageError(f"the checkpoint names a file outside its directory: {rel!r}")
    return p


def restore(target: str | int, *, output_dir: Path, run_id: str | None, store: Any) -> Path:
    from ..torch.checkpoint import load_checkpoint

    loaded = load_checkpoint(target, run_id=run_id, store=store, mode="resume")
    state = loaded.state
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise UsageError(
            f"checkpoint {loaded.info.oid[:15]}… is not a transformers Trainer checkpoint",
            hint="restore a checkpoint saved by ledger.integrations.hf.LedgerCallback",
        )
    name = str(state["folder"])
    _safe(name)
    files = {str(_safe(rel)): t for rel, t in state["files"].items()}
    folder = output_dir / name
    if folder.exists():
        if _same(folder, files):
            return folder
        raise UsageError(
            f"{folder} exists and differs from checkpoint {loaded.info.oid[:15]}…",
            hint="restore into another output_dir, or move the directory away",
        )
    output_dir.mkdir(parents=True, exist_ok=True)
    tmp = output_dir / f".{name}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for rel, t in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                f.write(t.numpy().tobytes())
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, folder)  # the directory appears whole or not at all
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _same(folder: Path, files: dict[str, Any]) -> bool:
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    if present != set(files):
        return False
    return all((folder / rel).read_bytes() == t.numpy().tobytes() for rel, t in files.items())
