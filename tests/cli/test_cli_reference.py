"""The generated options reference (docs/reference/cli-options.md) is current and covers
every option and argument of every command."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from ledger.cli._reference import render_reference
from ledger.cli.app import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli-options.md"


def test_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render_reference(), (
        "docs/reference/cli-options.md is stale: run "
        "`python -m ledger.cli._reference > docs/reference/cli-options.md`"
    )


def test_reference_covers_every_option() -> None:
    text = DOC.read_text(encoding="utf-8")

    def walk(cmd: object, path: str) -> None:
        section = text.split(f"## `{path}`\n", 1)[1].split("\n## ", 1)[0]
        for param in cmd.params:  # type: ignore[attr-defined]
            names = (
                [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else []
            )
            for name in names:
                assert name in section, f"{path}: {name} is not in docs/reference/cli-options.md"
            if param.param_type_name == "argument":
                assert (param.metavar or param.name.upper()) in section, (path, param.name)
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "ledger")


def test_reference_has_no_type_placeholders() -> None:
    """Every option value and argument has a name (`FILE`, `RUN`), never typer's `<path>`,
    `<str>` or `{RUN}`."""
    text = DOC.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("| `"):
            cell = line.split("`")[1]
            # A choice reads <a|b>; a bare type (<path>, <str>, <int>) names nothing.
            assert not re.search(r"<[\w\[\]]+>", cell) and "{" not in cell, line
    for usage in re.findall(r"```\n(ledger [^\n]*)\n```", text):
        assert "{" not in usage and usage == usage.replace(" run", " RUN"), usage
