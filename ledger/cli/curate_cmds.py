"""tag, rename, retract: curating runs after the fact (``ledger.run.curate``)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ._common import JsonOpt, LedgerOpt, open_store, print_json

__all__ = ["register"]

_RUN = typer.Argument(..., metavar="RUN", help="Run id, unique prefix, short id, or name.")


def _done(what: str, curated: object, json_out: bool) -> None:
    from ..run.curate import Curated

    if not isinstance(curated, Curated):
        raise TypeError(curated)
    if json_out:
        print_json({"run_id": curated.run_id, "record": curated.oid, **curated.record})
        return
    sys.stdout.write(f"{what} run {curated.run_id} ({curated.oid[:15]})\n")


def tag(
    run: str = _RUN,
    pairs: list[str] = typer.Argument(
        ..., metavar="KEY=VALUE...", help="Tags to set (over the run's own and earlier ones)."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Set tags on a run after the fact: a log entry, the run record is not touched."""
    from ..run.curate import parse_tag_args, tag_run

    tags = parse_tag_args(pairs)
    _done("tagged", tag_run(open_store(ledger), run, tags), json_out)


def rename(
    run: str = _RUN,
    name: str = typer.Argument(..., metavar="NAME", help="The run's new name."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Give a run a new name: a log entry, the run record keeps the name it was recorded with."""
    from ..run.curate import rename_run

    _done("renamed", rename_run(open_store(ledger), run, name), json_out)


def retract(
    run: str = _RUN,
    reason: str = typer.Option(
        ..., "--reason", metavar="TEXT", help="Why the run is retracted (required, one line)."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Retract a run: hidden from `ls` (see --retracted), warned about by `audit`, never
    deleted; it stays verifiable and replayable. A retraction is not undone."""
    from ..run.curate import retract_run

    _done("retracted", retract_run(open_store(ledger), run, reason), json_out)


def register(app: typer.Typer) -> None:
    app.command()(tag)
    app.command()(rename)
    app.command()(retract)
