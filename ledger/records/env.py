"""The environment and hardware fingerprint of a run (``ledger.capture.env`` builds it).

``determinism`` holds what a bitwise replay has to match (numerics-relevant environment
variables, world size, the accelerator stack and GPU models); the other fields describe the
machine. Environment variable values are stored redacted.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Record

__all__ = [
    "CpuInfo",
    "Determinism",
    "EnvDifference",
    "Environment",
    "GpuInfo",
    "OsInfo",
    "PythonInfo",
    "TorchInfo",
]

_PART = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class PythonInfo(BaseModel):
    model_config = _PART

    version: str  # platform.python_version(): "3.11.7"
    implementation: str  # "CPython"
    executable: str


class OsInfo(BaseModel):
    model_config = _PART

    system: str  # "Linux"
    release: str  # kernel release
    machine: str  # "x86_64"
    libc: str  # "glibc 2.36", or "" where unknown


class CpuInfo(BaseModel):
    model_config = _PART

    model: str
    logical_count: int = Field(ge=0)
    affinity_count: int = Field(ge=0)  # CPUs this process may run on (sets default threads)


class GpuInfo(BaseModel):
    model_config = _PART

    name: str
    driver_version: str = ""
    memory_total: str = ""  # as nvidia-smi prints it: "81559 MiB"


class TorchInfo(BaseModel):
    """Read from torch's installed ``version.py`` text: torch is never imported to get it."""

    model_config = _PART

    version: str
    cuda: str | None = None
    hip: str | None = None
    git_version: str | None = None
    cudnn: str | None = None  # version of the nvidia-cudnn-* distribution, where installed
    nccl: str | None = None  # version of the nvidia-nccl-* distribution, where installed


class Determinism(BaseModel):
    """The part of the environment a bitwise replay must reproduce."""

    model_config = _PART

    env: dict[str, str] = {}  # numerics-relevant and user-named variables (values redacted)
    world_size: int | None = None
    rank: int | None = None
    local_rank: int | None = None
    torch: TorchInfo | None = None
    gpus: list[GpuInfo] = []


class Environment(Record):
    KIND = "environment"
    SCHEMA = 1

    kind: Literal["environment"] = "environment"
    python: PythonInfo
    os: OsInfo
    hostname: str
    cpu: CpuInfo
    memory_total: int = Field(ge=0)  # bytes
    packages: dict[str, str]  # canonical distribution name -> version
    determinism: Determinism


class EnvDifference(BaseModel):
    """One differing field between two fingerprints, as a dotted path (``packages.numpy``)."""

    model_config = _PART

    field: str
    original: str | int | bool | None
    current: str | int | bool | None
    affects_numerics: bool
