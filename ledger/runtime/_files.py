"""Crash-safe writes into the staging dir: whole lines with one write, whole files by rename.

No fsync: the staging dir has to survive the process being killed, not the machine losing power,
and the page cache survives SIGKILL. That keeps a DataLoader worker's start or a flush cheap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["append_line", "write_all", "write_json_atomic"]


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_json_atomic(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def append_line(path: Path, value: Any) -> None:
    """One JSON line, one O_APPEND write: concurrent writers never interleave inside a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
