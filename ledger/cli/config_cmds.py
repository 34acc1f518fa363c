"""config: show the project defaults that ``ledger record`` applies."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import JsonOpt, LedgerOpt, ledger_dir, out_console, print_json

__all__ = ["register"]


def config(ledger: Path | None = LedgerOpt, json_out: bool = JsonOpt) -> None:
    """Show the defaults `ledger record` applies (pyproject.toml, .ledger/config.toml)."""
    from ..errors import LedgerNotFoundError
    from ..run.project_config import load_project_config
    from ..store import find_ledger_dir

    try:
        root: Path | None = find_ledger_dir(ledger_dir(ledger))
    except LedgerNotFoundError:
        root = None
    cfg = load_project_config(root)
    if json_out:
        print_json(cfg.to_json())
        return
    con = out_console()
    if not cfg.sources:
        con.print(
            "No project defaults: add [tool.ledger.record] to pyproject.toml "
            "or [record] to .ledger/config.toml.",
            markup=False,
        )
        return
    for src in cfg.sources:
        con.print(f"from {src}", markup=False)
    rec = cfg.record.to_json()
    for key in ("input", "output", "config", "metric"):
        for value in rec[key]:
            con.print(f"record.{key:<7} {value}", markup=False)
    for k, v in rec["tags"].items():
        con.print(f"record.tags    {k}={v}", markup=False)


def register(app: typer.Typer) -> None:
    app.command()(config)
