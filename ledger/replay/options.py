"""What a replay is asked to do: ``ReplayOptions``, a plain dataclass below every module that
reads it (the engine, the output comparison, the CLI, audits)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..records.run import Run

__all__ = ["Mode", "ReplayOptions"]

Mode = Literal["bitwise", "tolerance", "seeds"]


@dataclass
class ReplayOptions:
    mode: Mode = "bitwise"
    rtol: float | None = None
    atol: float | None = None
    per_metric: dict[str, tuple[float, float]] = field(default_factory=dict)
    seeds: int = 5
    margin: float | None = None
    metric: str | None = None  # main metric for seeds mode
    seed_arg: str | None = None  # argv flag that carries the seed, e.g. --seed
    jobs: int = 1
    keep_workspace: bool = False
    strict_env: bool = False
    include_logs: bool = False
    workspace_parent: Path | None = None
    bootstrap_seed: int | None = None
    original_group: list[str] = field(default_factory=list)  # more original seeds (run ids)
    from_checkpoint: str | None = None  # checkpoint id/prefix or step saved by the original
    # Seeds mode: called as each replay ends with (index, seed, replay run, its main metric).
    on_seed: Callable[[int, int, Run, float | None], None] | None = None
