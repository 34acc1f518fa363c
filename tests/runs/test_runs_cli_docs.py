"""The reference documents every option of every command in that command's own section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer.main

from ledger.cli.app import app

CLI_DOC = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md").read_text()
# Documented once at the top of the reference: they mean the same for every command.
GLOBAL = {"--ledger", "--help"}


def _commands() -> dict[str, object]:
    out: dict[str, object] = {}
    for name, cmd in typer.main.get_command(app).commands.items():  # type: ignore[attr-defined]
        subs = getattr(cmd, "commands", None)
        for subname, subcmd in (subs or {}).items():
            out[f"{name} {subname}"] = subcmd
        if not subs:
            out[name] = cmd
    return out


def _section(name: str) -> str:
    start = CLI_DOC.index(f"## `ledger {name}")
    end = CLI_DOC.find("\n## ", start + 1)
    return CLI_DOC[start : end if end > 0 else None]


def test_every_command_is_covered() -> None:
    assert {"record", "ls", "replay", "audit", "verify", "gc", "checkpoint export"} <= set(
        _commands()
    )


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_is_in_its_section(name: str) -> None:
    cmd: Any = _commands()[name]
    section = _section(name)
    for param in cmd.params:
        for opt in param.opts:
            if opt.startswith("--") and opt not in GLOBAL:
                assert f"`{opt}" in section, f"`ledger {name} {opt}` is not documented"
        assert (
            param.name == "help"
            or getattr(param, "help", None)
            or param.param_type_name == "argument"
        )
