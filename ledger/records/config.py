"""The resolved configuration of a run: config files, argparse namespaces, Hydra configs,
script globals and the values of other parsers (absl, click, typer).

Every value here is stored redacted (``ledger.capture.redact``). ``resolved`` is a merged view
for reading and diffing; the per-source values are kept beside it so nothing depends on the
merge rule (documented in ``docs/reference/config-capture.md``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Oid, Record
from .plain import config_digest

__all__ = [
    "ArgparseCapture",
    "ConfigCapture",
    "ConfigFile",
    "HydraCapture",
    "ParserCapture",
    "ScriptCapture",
]

_PART = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ConfigFile(BaseModel):
    model_config = _PART

    path: str  # as given on the command line
    oid: Oid  # the raw bytes, verbatim (replay writes them back)
    size: int = Field(ge=0)
    format: Literal["yaml", "json", "toml", "python", "ini"]
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


class ScriptCapture(BaseModel):
    """The plain module globals of one process's ``__main__`` (source "script globals"), as
    they stood when it ended, else at its first checkpoint save."""

    model_config = _PART

    when: Literal["exit", "checkpoint"]
    values: dict[str, Any]  # name -> plain value, redacted
    typed: dict[str, str] = {}  # names whose value was a config object: name -> its kind
    left_out: dict[str, str] = {}  # name -> why it is not config (run state, not plain...)
    overrides: dict[str, str] = {}  # --key=value arguments the program took, as given
    argv: list[str] = []  # the process's arguments (redacted)
    script: str = ""  # __main__'s file
    source: bool = False  # whether the script's source decided which names count
    rank: int | None = None  # $RANK of the process
    pid: int = Field(ge=0)
    seq: int = Field(ge=1)
    time: float = 0.0


class ParserCapture(BaseModel):
    """The values a parser other than argparse and Hydra gave the program: absl's flags after
    parsing, a click/typer command's parameters as it was invoked, a jsonargparse namespace
    or the arguments Fire bound to a call."""

    model_config = _PART

    parser: Literal["absl", "click", "typer", "fire", "jsonargparse"]
    name: str  # the program (absl) or the command path (click, typer)
    values: dict[str, Any]  # redacted
    argv: list[str] = []  # the arguments parsed (absl) or left over (click), redacted
    rank: int | None = None
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
    script: list[ScriptCapture] = Field(default_factory=list)
    parsers: list[ParserCapture] = Field(default_factory=list)
    resolved: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # captures that failed, one line each
    empty_reason: str = ""  # when ``resolved`` is empty: why no config was found

    def config_digest(self) -> str:
        """Digest of the configuration itself: ignores process ids, times and notes, so the
        same command with the same files and arguments gets the same digest on every run."""
        return config_digest(self.to_json())
