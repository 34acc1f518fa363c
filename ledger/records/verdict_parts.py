"""Parts of a replay verdict: how two files or two trees of files compared, and the settings used.

These are nested models, not records: a verdict record embeds them. Values that differ are kept as
their ``repr`` text so that -0.0, NaN and long strings survive JSON unchanged; differences are
numbers (NaN and infinities stored as "nan", "inf").
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .base import JsonFloat, Oid

__all__ = [
    "CompareSettings",
    "Difference",
    "FileComparison",
    "FileStatus",
    "ToleranceSpec",
    "TreeComparison",
]

FileStatus = Literal[
    "identical",  # same content (same bytes, or same tensors/values bit for bit)
    "close",  # every value within tolerance, some not bit for bit
    "different",
    "missing-in-original",
    "missing-in-replay",
    "not-comparable",  # unreadable, or unsafe to load (pickle): see ``reason``
    "ignored",  # captured logs when ``include_logs`` is off
]
DifferenceKind = Literal["value", "dtype", "shape", "type", "structure", "content"]

_FRIENDLY = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _check_tol(value: float | None, name: str) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


class ToleranceSpec(BaseModel):
    """An (rtol, atol) pair for a per-name override."""

    model_config = _FRIENDLY

    rtol: float
    atol: float

    @field_validator("rtol", "atol")
    @classmethod
    def _finite(cls, value: float) -> float:
        _check_tol(value, "tolerance")
        return value


class CompareSettings(BaseModel):
    """How to compare: ``bitwise`` (content bit for bit) or ``tolerance``.

    In tolerance mode a value's tolerance is, in order: the override whose key equals one of its
    names (tensor key, JSON key path or leaf key, CSV column, TensorBoard tag), else the first
    override whose key is a glob matching one of them, else the global ``rtol``/``atol``, else
    the default of its dtype (ledger.stats; integers and booleans exact).
    """

    model_config = _FRIENDLY

    mode: Literal["bitwise", "tolerance"] = "tolerance"
    rtol: float | None = None
    atol: float | None = None
    overrides: dict[str, ToleranceSpec] = Field(default_factory=dict)
    include_logs: bool = False
    # What a replay cannot keep equal by construction (ledger/replay/compare/volatile.py):
    # (original spellings, replay spellings) of each root, paths both share (the ledger),
    # and whether values named like timings are left out (plus the user's own timing names).
    path_roots: list[tuple[list[str], list[str]]] = Field(default_factory=list)
    shared_paths: list[str] = Field(default_factory=list)
    skip_volatile: bool = False
    timing: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _both_or_neither(self) -> CompareSettings:
        _check_tol(self.rtol, "rtol")
        _check_tol(self.atol, "atol")
        if (self.rtol is None) != (self.atol is None):
            raise ValueError("give both rtol and atol, or neither (to use the dtype defaults)")
        return self


class Difference(BaseModel):
    """The first difference found in a file (for tensors: in the first differing tensor)."""

    model_config = _FRIENDLY

    kind: DifferenceKind
    description: str  # one line for people
    key: str | None = None  # tensor key, JSON key path, CSV column, TensorBoard tag
    index: list[int] | None = None  # tensors: the element with the largest difference
    first_index: list[int] | None = None  # tensors: the first mismatching element (C order)
    step: int | None = None  # TensorBoard
    line: int | None = None  # 1-based line (CSV/TSV row, log line)
    original: str | None = None  # repr of the original's value
    replay: str | None = None
    abs_diff: JsonFloat | None = None
    rel_diff: JsonFloat | None = None  # abs_diff / |original|
    rtol: float | None = None  # the tolerance applied (None: bitwise)
    atol: float | None = None


class FileComparison(BaseModel):
    """How one file (or one TensorBoard directory) of the original compares with the replay's."""

    model_config = _FRIENDLY

    path: str
    comparator: str
    status: FileStatus
    reason: str | None = None  # why not comparable / missing / ignored
    first_difference: Difference | None = None
    mismatches: int = 0
    total: int = 0
    unit: str = "values"  # what mismatches/total count: elements, values, cells, lines, files...
    notes: list[str] = Field(default_factory=list)


class TreeComparison(BaseModel):
    """Every file of two trees; ``ok`` unless a file is different, missing or not comparable."""

    model_config = _FRIENDLY

    original: Oid | None
    replay: Oid | None
    settings: CompareSettings
    status: Literal["identical", "close", "different", "not-comparable"]
    ok: bool
    counts: dict[str, int]  # status -> number of files
    files: list[FileComparison]
    notes: list[str] = Field(default_factory=list)
