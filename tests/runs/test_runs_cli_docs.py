"""The reference documents every option of the commands about runs and replays."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from ledger.cli.app import app

CLI_DOC = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md").read_text()
GLOBAL = {"--ledger", "--json", "--help"}  # documented once at the top of the reference


def _section(name: str) -> str:
    start = CLI_DOC.index(f"## `ledger {name}")
    end = CLI_DOC.find("\n## ", start + 1)
    return CLI_DOC[start : end if end > 0 else None]


@pytest.mark.parametrize("name", ["ls", "show", "log", "replay", "diff"])
def test_every_option_is_in_its_section(name: str) -> None:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
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
