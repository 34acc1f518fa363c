"""metrics: metric series and run tables as CSV, JSON Lines or Parquet (``ledger.read``)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

import typer

from ._common import LedgerOpt, open_store

__all__ = ["register"]


class TableFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"


def metrics(
    runs: list[str] = typer.Argument(
        None, metavar="RUN...", help="Runs (default: every run `ledger ls` lists)."
    ),
    names: list[str] = typer.Option(
        [], "--metric", "-m", metavar="NAME", help="Only this metric (repeatable)."
    ),
    fmt: TableFormat = typer.Option(TableFormat.csv, "--format", "-f", help="The file format."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        metavar="FILE",
        help="Write to FILE (default: stdout; Parquet needs a file).",
    ),
    run_table: bool = typer.Option(
        False,
        "--runs",
        help="Export the run table (one row per run: params, metric last/best, tags, "
        "verdicts) instead of the series.",
    ),
    where: list[str] = typer.Option(
        [],
        "--where",
        "-w",
        metavar="FILTER",
        help="Only runs where FIELD OP VALUE holds, as in `ledger ls` (repeatable).",
    ),
    retracted: bool = typer.Option(
        False, "--retracted", help="Also retracted runs (a RUN named is always taken)."
    ),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Export metric series (long: run, metric, step, value, time, rank) or, with --runs,
    the run table, as CSV, JSON Lines or Parquet."""
    from ..errors import UsageError
    from ..read import Ledger
    from ..read.export import render_table
    from ..read.tables import METRIC_COLUMNS, RUN_COLUMNS
    from ..run.find import resolve_run
    from ._output import print_warnings

    if fmt is TableFormat.parquet and out is None:
        raise UsageError(
            "Parquet is binary: give a file with --out FILE", hint="or use --format csv|jsonl"
        )
    if run_table and names:
        raise UsageError("--metric selects series; the run table (--runs) has every metric")
    store = open_store(ledger)
    led = Ledger(store)
    wanted = list(dict.fromkeys(resolve_run(store, r) for r in runs or []))
    if run_table:
        rows = led.run_rows(where, retracted=retracted or bool(wanted), replays=bool(wanted))
        if wanted:
            rows = [r for r in rows if r["id"] in wanted]
        data = render_table(rows, fmt.value, RUN_COLUMNS)
    else:
        if not wanted:
            wanted = [r["id"] for r in led.run_rows(where, retracted=retracted)]
        elif where:
            keep = {r["id"] for r in led.run_rows(where, retracted=True, replays=True)}
            wanted = [w for w in wanted if w in keep]
        rows = led.metric_rows(wanted, names or None)
        data = render_table(rows, fmt.value, METRIC_COLUMNS)
    print_warnings(led.warnings, "run `ledger verify` to see every difference")
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from ..store.atomic import atomic_write_bytes
    from ..store.made import note_made

    if out.is_dir():
        raise UsageError(f"{out} is a folder", hint="give a file name with --out")
    atomic_write_bytes(out, data)  # whole or not at all
    note_made(store.root, out, "report")  # ledger's output, not the project's code
    sys.stderr.write(f"wrote {len(rows)} rows to {out}\n")


def register(app: typer.Typer) -> None:
    app.command()(metrics)
