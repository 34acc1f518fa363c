"""Every command is documented in docs/reference/cli.md and has help text (sqlite-utils' rule)."""

from __future__ import annotations

from pathlib import Path

import typer.main

from ledger.cli.app import app

CLI_DOC = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md").read_text()


def _commands() -> dict[str, object]:
    group = typer.main.get_command(app)
    out: dict[str, object] = {}
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        sub = getattr(cmd, "commands", None)
        if sub:
            for subname, subcmd in sub.items():
                out[f"{name} {subname}"] = subcmd
        else:
            out[name] = cmd
    return out


def test_every_command_is_documented_with_help() -> None:
    commands = _commands()
    assert {"init", "verify", "record", "replay", "audit"} <= set(commands)
    for name, cmd in commands.items():
        assert getattr(cmd, "help", None), f"`ledger {name}` has no help text"
        assert f"## `ledger {name}" in CLI_DOC, f"`ledger {name}` is not in docs/reference/cli.md"
