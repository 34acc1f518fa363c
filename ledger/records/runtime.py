"""What the training process itself reported, as embedded in a run record.

Produced by ``ledger.runtime.ingest.collect_runtime`` from the staging dir after the command
exits: metric summaries (series stored as objects), seeds, RNG state objects, determinism
settings, monitor alerts and traces, per rank. Not a top-level record: the run record embeds it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .base import Oid
from .metrics import MetricSummary

__all__ = [
    "DeterminismSettings",
    "MonitorAlert",
    "RankDeterminism",
    "RngStateRef",
    "RuntimeCapture",
    "SeedInfo",
    "TraceRef",
]

_CFG = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class DeterminismSettings(BaseModel):
    """The torch settings that decide whether a rerun can be bitwise identical."""

    model_config = _CFG

    torch_version: str
    deterministic_algorithms: bool
    deterministic_warn_only: bool
    cudnn_enabled: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    cudnn_version: int | None = None
    cublas_workspace_config: str | None = None
    matmul_allow_tf32: bool
    cudnn_allow_tf32: bool
    float32_matmul_precision: str
    num_threads: int
    num_interop_threads: int
    cuda_available: bool
    cuda_initialized: bool
    python_hash_seed: str | None = None


class RankDeterminism(BaseModel):
    model_config = _CFG

    rank: int
    settings: DeterminismSettings


class SeedInfo(BaseModel):
    """One rank's root seed and the child seeds it derived, by purpose."""

    model_config = _CFG

    rank: int
    local_rank: int = 0
    world_size: int = 1
    root: int
    root_source: str  # env | argument | urandom | run-id | broadcast | urandom-per-rank
    streams: dict[str, int] = Field(default_factory=dict)
    seeded: dict[str, list[str]] = Field(default_factory=dict)  # purpose -> python/numpy/torch


class RngStateRef(BaseModel):
    """A captured ``RngState`` (stored as a JSON object) of one rank or DataLoader worker."""

    model_config = _CFG

    rank: int
    worker: int | None = None
    label: str
    step: int | None = None
    state: Oid
    seed: int | None = None  # the seed a worker was given
    wall: float | None = None  # seconds since the run started


class MonitorAlert(BaseModel):
    """The first bad step a training monitor saw, and where."""

    model_config = _CFG

    rank: int
    kind: str  # nonfinite-loss | nonfinite-grad | nonfinite-param
    step: int  # first bad step (exact where the monitor checks every step, else first seen)
    last_clean_step: int | None = None
    parameter: str | None = None
    message: str


class TraceRef(BaseModel):
    """One rank's trace (``ledger.torch.trace``): a JSON object ``{"header", "steps"}``."""

    model_config = _CFG

    rank: int
    every: int
    steps: int  # traced steps stored
    trace: Oid


class RuntimeCapture(BaseModel):
    model_config = _CFG

    ranks: list[int] = Field(default_factory=list)
    world_size: int | None = None
    metrics: list[MetricSummary] = Field(default_factory=list)
    seeds: list[SeedInfo] = Field(default_factory=list)
    rng_states: list[RngStateRef] = Field(default_factory=list)
    determinism: list[RankDeterminism] = Field(default_factory=list)
    alerts: list[MonitorAlert] = Field(default_factory=list)
    traces: list[TraceRef] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
