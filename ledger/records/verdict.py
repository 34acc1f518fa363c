"""A replay verdict: immutable, linked to the original run and its replays."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Record, Timestamp

__all__ = ["Verdict"]

Outcome = Literal["reproduced", "not-reproduced", "inconclusive", "could-not-replay"]


class Verdict(Record):
    KIND = "verdict"
    SCHEMA = 1

    kind: Literal["verdict"] = "verdict"
    original: str  # run id
    replays: list[str]  # run ids of the replay runs
    mode: Literal["bitwise", "tolerance", "seeds"]
    outcome: Outcome
    summary: str  # one sentence a person reads first
    created: Timestamp
    exit_status: dict[str, Any] = Field(default_factory=dict)  # original vs replay status
    metrics: dict[str, Any] | None = None  # stats.SeriesComparison.to_json()
    files: list[dict[str, Any]] = Field(default_factory=list)  # per-file comparisons
    seeds: dict[str, Any] | None = None  # stats.SeedComparison.to_json() and settings
    environment_drift: list[dict[str, Any]] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)  # e.g. "different-hardware"
    settings: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
