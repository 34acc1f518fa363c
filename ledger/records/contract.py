"""The contract frozen before a run starts: everything needed to run it again."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Oid, Record

__all__ = ["Contract"]


class Contract(Record):
    KIND = "contract"
    SCHEMA = 1

    kind: Literal["contract"] = "contract"
    argv: list[str]  # redacted; a byte that is not UTF-8 shows as U+FFFD
    # The exact bytes of each (redacted) argument, base64, when one is not UTF-8: what replay
    # runs (ledger/capture/rawbytes.py). Absent otherwise.
    argv_b64: list[str] | None = None
    cwd: str  # absolute, informational; replay uses code.cwd_relpath
    code: Oid  # CodeSnapshot record
    code_digest: str
    config_files: list[dict[str, Any]] = Field(default_factory=list)  # ConfigFile models
    inputs: list[dict[str, Any]] = Field(default_factory=list)  # InputDigest models
    environment: Oid  # Environment record
    env_digest: str
    env_vars: dict[str, str] = Field(default_factory=dict)  # set again on replay (redacted)
    seed_root: int | None = None  # forced with LEDGER_SEED_ROOT, if any
    # How the run was recorded, so replay records it the same way.
    metric_patterns: list[str] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    env_names: list[str] = Field(default_factory=list)
