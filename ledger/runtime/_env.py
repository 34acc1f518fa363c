"""Who this process is: the run it belongs to (``ledger record``'s variables) and its rank."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ._warn import warn_once

__all__ = ["RankInfo", "rank_info", "run_env"]


@dataclass(frozen=True)
class RankInfo:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _int_env(name: str, default: int, minimum: int) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        warn_once("bad-env", f"ignoring {name}={text!r}: not an integer >= {minimum}")
        return default
    return value


def rank_info() -> RankInfo:
    """Rank, local rank and world size as torchrun (or any launcher using its names) sets them."""
    world = _int_env("WORLD_SIZE", 1, 1)
    rank = _int_env("RANK", 0, 0)
    local = _int_env("LOCAL_RANK", rank, 0)
    if rank >= world:
        warn_once("bad-env", f"RANK={rank} is not below WORLD_SIZE={world}; using rank 0")
        rank, local = 0, 0
    return RankInfo(rank=rank, local_rank=local, world_size=world)


def run_env() -> tuple[str | None, Path | None, Path | None]:
    """(run id, staging dir, ledger dir) from the environment; staging dir None if unusable."""
    run_id = os.environ.get("LEDGER_RUN_ID") or None
    store = os.environ.get("LEDGER_DIR") or None
    text = os.environ.get("LEDGER_RUN_DIR") or None
    run_dir = Path(text) if text else None
    if run_dir is not None and not (run_dir.is_dir() and os.access(run_dir, os.W_OK)):
        warn_once(
            "bad-run-dir",
            f"LEDGER_RUN_DIR={text} is not a writable directory; this process logs to memory only",
        )
        run_dir = None
    return run_id, run_dir, Path(store) if store else None
