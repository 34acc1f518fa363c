"""Scalars from TensorBoard event files, read without TensorFlow.

Event files are TFRecord streams: ``u64 length, u32 masked crc(length), payload, u32 masked
crc(payload)``; each payload is an ``Event`` protobuf. Their names and contents embed wall
times, host names and pids, so only ``(tag, step, value)`` is kept. A truncated last record
(the writer was killed) ends the read quietly.
"""

from __future__ import annotations

import math
import struct
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: importing the models would load pydantic
    from ..records.metrics import MetricPoint


__all__ = ["find_event_files", "read_scalars"]


def find_event_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root] if "tfevents" in root.name else []
    return sorted(p for p in root.rglob("*tfevents*") if p.is_file())


def _records(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if len(header) < 12:
                return
            (length,) = struct.unpack("<Q", header[:8])
            payload = f.read(length)
            footer = f.read(4)
            if len(payload) < length or len(footer) < 4:
                return
            yield payload


def read_scalars(path: Path) -> tuple[dict[str, list[tuple[int, float, float]]], list[str]]:
    """tag -> [(step, wall_time, value)] and notes. Needs the ``tensorboard`` package."""
    notes: list[str] = []
    try:
        from tensorboard.compat.proto import event_pb2
    except ImportError:
        return {}, [f"{path}: tensorboard is not installed; event file not parsed"]
    out: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for payload in _records(path):
        event = event_pb2.Event()
        try:
            event.ParseFromString(payload)
        except Exception:
            notes.append(f"{path.name}: an unreadable event record was skipped")
            continue
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            if value.HasField("simple_value"):
                v = float(value.simple_value)
            elif value.HasField("tensor") and value.tensor.float_val:
                v = float(value.tensor.float_val[0])
            elif value.HasField("tensor") and value.tensor.double_val:
                v = float(value.tensor.double_val[0])
            else:
                continue
            out[value.tag].append((int(event.step), float(event.wall_time), v))
    return dict(out), notes


def scalars_as_points(
    scalars: dict[str, list[tuple[int, float, float]]], t0_wall: float
) -> dict[str, list[MetricPoint]]:
    """Wall times relative to the run start, so curves share the x-axis of other sources."""
    points: dict[str, list[MetricPoint]] = {}
    for tag, rows in scalars.items():
        points[tag] = [
            (step, None, (wall - t0_wall) if math.isfinite(wall) else None, value)
            for step, wall, value in rows
        ]
    return points
