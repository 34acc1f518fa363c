"""The stored results of ``ledger check`` (the verification ladder) and ``ledger gate`` (the
pre-delivery gate). Each lists its checks with the figure a person reads and a pass/fail."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Record, Timestamp

__all__ = ["Check", "CheckItem", "Gate"]


class CheckItem(BaseModel):
    """One check: ``passed`` is None when it was skipped (and ``figure`` says why)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    level: str  # ladder level or gate check group ("one-step", "export", ...)
    name: str
    passed: bool | None
    required: bool = True
    figure: str  # the one line a person reads: "loss 2.31 -> 0.02 in 40 steps"
    detail: dict[str, Any] = Field(default_factory=dict)


class Check(Record):
    """``ledger check``: the levels run on a training spec, in order."""

    KIND = "check"
    SCHEMA = 1

    kind: Literal["check"] = "check"
    check_id: str
    created: Timestamp
    spec: str  # as given: "module:function" or a YAML path
    spec_digest: str | None = None  # the YAML file's bytes, when the spec is one
    run_id: str | None = None  # the run this check judged (under `ledger record`, or --run)
    levels: list[str]  # requested, in order
    stopped_at: str | None = None  # first failing level when the ladder stopped there
    items: list[CheckItem]
    passed: bool
    environment: dict[str, Any] = Field(default_factory=dict)  # torch version, threads
    ledger_version: str


class Gate(Record):
    """``ledger gate``: a checkpoint judged for delivery. ``checkpoint_digest`` is not a link
    (checkpoint retention decides how long the checkpoint lives, not its gate records)."""

    KIND = "gate"
    SCHEMA = 1

    kind: Literal["gate"] = "gate"
    gate_id: str
    created: Timestamp
    checkpoint: str  # as given on the command line
    checkpoint_digest: str  # the checkpoint record id, or the weight file's BLAKE3
    checkpoint_source: Literal["ledger", "safetensors", "torch"]
    run_id: str | None = None  # the run that saved the checkpoint, when it is a ledger one
    step: int | None = None
    spec: str
    spec_digest: str | None = None
    items: list[CheckItem]
    passed: bool  # every required check passed
    environment: dict[str, Any] = Field(default_factory=dict)
    ledger_version: str
