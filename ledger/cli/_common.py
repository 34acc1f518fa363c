"""Shared CLI plumbing: finding the ledger, printing data or JSON, turning errors into exits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import Store

__all__ = [
    "JsonOpt",
    "LedgerOpt",
    "err_console",
    "open_store",
    "out_console",
    "print_json",
    "print_warnings",
]

LedgerOpt = typer.Option(
    None,
    "--ledger",
    "-L",
    help="Ledger directory (default: $LEDGER_DIR, else the nearest .ledger above here).",
    show_default=False,
)
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def out_console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def err_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def open_store(ledger: Path | None) -> Store:
    from ..store import Store

    return Store.open(ledger)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def print_warnings(warnings: list[str], hint: str | None = None) -> None:
    """One ``ledger: warning:`` line each, then the hint once, on stderr (stdout stays clean
    for --json)."""
    for w in dict.fromkeys(warnings):
        sys.stderr.write(f"ledger: warning: {w}\n")
    if warnings and hint:
        sys.stderr.write(f"ledger: hint: {hint}\n")
