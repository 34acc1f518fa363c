"""Project defaults for ``ledger record``, read from the user's files.

Two places, both optional, merged in this order (later wins key by key):

1. ``[tool.ledger.record]`` in the nearest ``pyproject.toml`` at or above the current directory;
2. ``[record]`` in ``config.toml`` inside the ledger directory (``.ledger/config.toml``).

Keys: ``input``, ``output``, ``config``, ``metric`` (lists of strings, like the repeatable
options) and ``tags`` (a table of strings). Relative paths are relative to the directory of the
file that names them (the project root for both files). ``ledger record`` adds its own options
to these defaults; ``--no-defaults`` ignores them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._parse import ParseError, load_toml
from ..errors import UsageError

__all__ = ["ProjectConfig", "RecordDefaults", "load_project_config"]

_LIST_KEYS = ("input", "output", "config", "metric")
_PATH_KEYS = ("input", "output", "config")


@dataclass
class RecordDefaults:
    input: list[Path] = field(default_factory=list)
    output: list[Path] = field(default_factory=list)
    config: list[Path] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "input": [str(p) for p in self.input],
            "output": [str(p) for p in self.output],
            "config": [str(p) for p in self.config],
            "metric": list(self.metric),
            "tags": dict(self.tags),
        }


@dataclass
class ProjectConfig:
    record: RecordDefaults = field(default_factory=RecordDefaults)
    sources: list[Path] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"sources": [str(s) for s in self.sources], "record": self.record.to_json()}


def _nearest_pyproject(start: Path) -> Path | None:
    for d in [start, *start.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return load_toml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    except ParseError as e:
        raise UsageError(f"{path} is not valid TOML: {e}", hint="fix the file") from None


def _display_path(base: Path, text: str) -> Path:
    """``text`` relative to ``base``, written relative to the current directory when inside it."""
    p = Path(text).expanduser()
    full = p if p.is_absolute() else base / p
    try:
        return Path(os.path.relpath(full)) if full.is_relative_to(Path.cwd()) else full
    except ValueError:  # another drive
        return full


def _merge(into: RecordDefaults, table: Any, *, path: Path, base: Path, where: str) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where} in {path} is not a table", hint="see docs/reference/cli.md")
    for key, value in table.items():
        if key in _LIST_KEYS:
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(
                    f"{where}.{key} in {path} must be a list of strings",
                    hint=f'e.g. {key} = ["…"]',
                )
            if key in _PATH_KEYS:
                setattr(into, key, [_display_path(base, v) for v in value])
            else:
                into.metric = list(value)
        elif key == "tags":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise UsageError(
                    f"{where}.tags in {path} must be a table of strings",
                    hint='e.g. tags = { dataset = "cifar10" }',
                )
            into.tags.update(value)
        else:
            raise UsageError(
                f"unknown key {where}.{key} in {path}",
                hint="known keys: " + ", ".join((*_LIST_KEYS, "tags")),
            )


def load_project_config(ledger_root: Path | None, *, cwd: Path | None = None) -> ProjectConfig:
    """The merged project defaults (empty when neither file sets any)."""
    cfg = ProjectConfig()
    pyproject = _nearest_pyproject((cwd or Path.cwd()).absolute())
    if pyproject is not None:
        tool = _read_toml(pyproject).get("tool", {})
        section = tool.get("ledger") if isinstance(tool, dict) else None
        if section is not None:
            if not isinstance(section, dict):
                raise UsageError(f"[tool.ledger] in {pyproject} is not a table")
            unknown = set(section) - {"record"}
            if unknown:
                raise UsageError(
                    f"unknown key tool.ledger.{sorted(unknown)[0]} in {pyproject}",
                    hint="known sections: [tool.ledger.record]",
                )
            if "record" in section:
                _merge(
                    cfg.record,
                    section["record"],
                    path=pyproject,
                    base=pyproject.parent,
                    where="tool.ledger.record",
                )
            cfg.sources.append(pyproject)
    if ledger_root is not None:
        own = ledger_root / "config.toml"
        if own.is_file():
            data = _read_toml(own)
            unknown = set(data) - {"record"}
            if unknown:
                raise UsageError(
                    f"unknown key {sorted(unknown)[0]} in {own}", hint="known sections: [record]"
                )
            if "record" in data:
                # Paths in .ledger/config.toml are relative to the project (the ledger's parent).
                _merge(
                    cfg.record, data["record"], path=own, base=ledger_root.parent, where="record"
                )
            cfg.sources.append(own)
    return cfg
