"""Shared CLI plumbing: finding the ledger, printing data or JSON, turning errors into exits."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ._output import console, print_json, print_warnings

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import Store

__all__ = [
    "JsonOpt",
    "LedgerOpt",
    "err_console",
    "finite_non_negative",
    "ledger_dir",
    "open_store",
    "out_console",
    "print_json",
    "print_warnings",
    "set_global_ledger",
]

LedgerOpt = typer.Option(
    None,
    "--ledger",
    "-L",
    metavar="DIR",
    help="Ledger directory (default: $LEDGER_DIR, else the nearest .ledger above here).",
    show_default=False,
)
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def finite_non_negative(value: float | None) -> float | None:
    """Option callback for tolerances, margins and hours: click's ``min=0`` lets ``nan``
    through (no comparison with NaN fails) and ``inf`` reaches the records, which cannot hold
    it, after the work is done. Refused as the arguments are parsed: exit 2."""
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"must be a finite number, 0 or more; got {value}")
    return value


# `ledger -L DIR cmd` and `ledger cmd -L DIR` mean the same; the one after the command wins.
_global_ledger: Path | None = None


def set_global_ledger(path: Path | None) -> None:
    global _global_ledger
    _global_ledger = path


def ledger_dir(ledger: Path | None) -> Path | None:
    """The ledger a command was pointed at: its own ``--ledger``, else the global one."""
    return ledger if ledger is not None else _global_ledger


def out_console() -> Console:
    return console()


def err_console() -> Console:
    return console(stderr=True)


def open_store(ledger: Path | None) -> Store:
    from ..store import Store

    return Store.open(ledger_dir(ledger))
