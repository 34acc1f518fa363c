"""The resolved configuration of a run: config files, argparse namespaces, Hydra configs.

Every value here is stored redacted (``ledger.capture.redact``). ``resolved`` is a merged view
for reading and diffing; the per-source values are kept beside it so nothing depends on the
merge rule (documented in ``docs/reference/config-capture.md``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Oid, Record
from .plain import config_digest

__all__ = ["ArgparseCapture", "ConfigCapture", "ConfigFile", "HydraCapture"]

_PART = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ConfigFile(BaseModel):
    model_config = _PART

    path: str  # as given on the command line
    oid: Oid  # the raw bytes, verbatim (replay writes them back)
    size: int = Field(ge=0)
    format: Literal["yaml", "json", "toml"]
    value: Any  # parsed, JSON-safe, redacted
    redacted: list[str] = []  # dotted paths whose values were redacted


class ArgparseCapture(BaseModel):
    """One top-level ``parse_args``-family call in the child, with defaults resolved."""

    model_config = _PART

    prog: str
    argv: list[str]  # the arguments parsed (redacted)
    namespace: dict[str, Any]  # vars(namespace), JSON-safe, redacted
    unknown: list[str] = []  # what parse_known_args left over (redacted)
    method: str = "parse_args"
    script: str = ""  # sys.argv[0] of the process
    pid: int = Field(ge=0)
    seq: int = Field(ge=1)  # 1 for the process's first call, 2 for the next...
    time: float = 0.0  # unix time of the capture, for ordering


class HydraCapture(BaseModel):
    """The config a Hydra task function received (``hydra`` node removed)."""

    model_config = _PART

    config: Any  # resolved where interpolation succeeded, else as composed (redacted)
    resolved: bool
    overrides: list[str] = []  # redacted
    output_dir: str = ""
    pid: int = Field(ge=0)
    seq: int = Field(ge=1)
    time: float = 0.0


class ConfigCapture(Record):
    KIND = "config"
    SCHEMA = 1

    kind: Literal["config"] = "config"
    argv: list[str]  # the wrapped command (redacted)
    files: list[ConfigFile] = Field(default_factory=list)
    argparse: list[ArgparseCapture] = Field(default_factory=list)
    hydra: list[HydraCapture] = Field(default_factory=list)
    resolved: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # captures that failed, one line each

    def config_digest(self) -> str:
        """Digest of the configuration itself: ignores process ids, times and notes, so the
        same command with the same files and arguments gets the same digest on every run."""
        return config_digest(self.to_json())
