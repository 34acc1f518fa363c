"""What ``ledger record`` (and ``ledger.start``, and replay) is asked to do: ``RecordOptions``.

A plain dataclass in the lowest module of the run layer, so every module that reads the options
(contract, record, start, replay, the CLI) imports it from below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RecordOptions"]


@dataclass
class RecordOptions:
    command: list[str]
    name: str | None = None
    inputs: list[Path] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    configs: list[Path] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    env_names: list[str] = field(default_factory=list)
    require_clean: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    cwd: Path = field(default_factory=Path.cwd)
    store_inputs: bool = True
    # Store the files the run read that a replay would not have as inputs (ledger/run/reads.py)
    auto_inputs: bool = False
    # Set by replay: the run this one replays, variables to set, a forced seed root.
    replay_of: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    seed_root: int | None = None
    # Set by replay: the stored CodeSnapshot the workspace was rebuilt from, recorded as the
    # code instead of a snapshot of the (temporary) workspace, so a replay can be replayed.
    code: str | None = None
    # Modules the caller needs once the command has exited (a replay: comparing, judging),
    # imported while it runs (ledger/run/warm.py).
    warm: tuple[str, ...] = ()
    # False: the caller brings the index up to date itself once it is done (a replay, after
    # storing its verdict); the index may lag the log, never lead it (docs/format.md).
    update_index: bool = True
