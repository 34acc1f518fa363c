"""The fixed choices options take, as enums so that ``--help`` lists them and click refuses
anything else (exit 2). A test keeps them equal to the library's ``Literal`` types, which are
not imported here to keep ``--help`` fast."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ExportFormat", "ReplayMode", "RunStatus", "SeedExecutor"]


class ReplayMode(StrEnum):
    bitwise = "bitwise"
    tolerance = "tolerance"
    seeds = "seeds"


class SeedExecutor(StrEnum):
    """Where seeds-mode replays run (``ledger.replay.executors.EXECUTORS``)."""

    local = "local"
    submitit_local = "submitit-local"
    slurm = "slurm"


class ExportFormat(StrEnum):
    safetensors = "safetensors"
    pt = "pt"
    dcp = "dcp"


class RunStatus(StrEnum):
    """A recorded status, plus ``abandoned``: running, but its recorder process is gone."""

    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    killed = "killed"
    interrupted = "interrupted"
    abandoned = "abandoned"
