"""The files a run read (``ledger/_hook/reads.py`` saw them open) and whether a replay has them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Record

__all__ = ["ReadFile", "ReadStatus", "Reads"]

# code: in the code snapshot; input: under an --input; written: the run changed it before
# sealing (its own output); the rest a replay will not have: gitignored, left out of the code
# snapshot (a limit, a credential file), outside the repository.
ReadStatus = Literal["code", "input", "written", "gitignored", "left-out", "outside"]

# What a replay's workspace does not rebuild.
NOT_REPLAYED: frozenset[str] = frozenset({"gitignored", "left-out", "outside"})


class ReadFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    # As ``--input`` takes it: relative to the run's working directory inside the
    # repository, absolute outside it.
    path: str
    status: ReadStatus


class Reads(Record):
    """Every regular file the recorded Python processes opened for reading only, sorted by
    path, with what a replay makes of it. Files the interpreter, site-packages and system
    folders hold are never listed (docs/how-to/record-and-replay.md says what is not seen)."""

    KIND = "reads"
    SCHEMA = 1

    kind: Literal["reads"] = "reads"
    files: list[ReadFile] = Field(default_factory=list)
    n_files: int = Field(default=0, ge=0)  # exact, even when ``files`` was cut
    truncated: bool = False
    notes: list[str] = Field(default_factory=list)
