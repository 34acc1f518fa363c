"""record, ls, show, log: commands about runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ._choices import RunStatus
from ._common import (
    JsonOpt,
    LedgerOpt,
    ledger_dir,
    open_store,
    out_console,
    print_json,
    print_warnings,
)
from .record_cmd import RecordArgs, run_record
from .record_cmd import parse_tags as _parse_tags

__all__ = ["register"]


def record(
    ctx: typer.Context,
    name: str | None = typer.Option(
        None, "--name", "-n", metavar="NAME", help="A name for the run."
    ),
    inputs: list[Path] = typer.Option(
        [], "--input", "-i", metavar="PATH", help="Input file or directory (repeatable)."
    ),
    outputs: list[Path] = typer.Option(
        [],
        "--output",
        "-o",
        metavar="PATH",
        help="Output file or directory to capture (repeatable).",
    ),
    configs: list[Path] = typer.Option(
        [], "--config", "-c", metavar="FILE", help="Config file: YAML, JSON or TOML (repeatable)."
    ),
    metrics: list[str] = typer.Option(
        [],
        "--metric",
        "-m",
        metavar="REGEX",
        help="RE2 regex with named groups over the output (repeatable).",
    ),
    env_names: list[str] = typer.Option(
        [],
        "--env",
        "-e",
        metavar="NAME",
        help="Also record this environment variable (repeatable).",
    ),
    require_clean: bool = typer.Option(
        False, "--require-clean", help="Refuse to run with uncommitted changes."
    ),
    tags: list[str] = typer.Option(
        [], "--tag", "-t", metavar="KEY=VALUE", help="KEY=VALUE label (repeatable)."
    ),
    no_store_inputs: bool = typer.Option(
        False, "--no-store-inputs", help="Digest inputs but do not copy them into the store."
    ),
    no_defaults: bool = typer.Option(
        False, "--no-defaults", help="Ignore the project defaults shown by `ledger config`."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = typer.Option(
        False, "--json", help="Print the sealed run summary as JSON on stderr."
    ),
) -> None:
    """Run CMD (after --) and seal an immutable run record. Exits with CMD's exit code."""
    # The same body runs without typer for the plain form (ledger/cli/entry.py).
    args = RecordArgs(
        command=list(ctx.args),
        name=name,
        inputs=inputs,
        outputs=outputs,
        configs=configs,
        metrics=metrics,
        env_names=env_names,
        require_clean=require_clean,
        tags=tags,
        no_store_inputs=no_store_inputs,
        no_defaults=no_defaults,
        ledger=ledger_dir(ledger),
        json_out=json_out,
    )
    raise typer.Exit(run_record(args))


def ls(
    name: str | None = typer.Option(
        None, "--name", metavar="NAME", help="Only runs with this name."
    ),
    status: RunStatus | None = typer.Option(None, "--status", help="Only runs with this status."),
    tag: list[str] = typer.Option(
        [], "--tag", metavar="KEY=VALUE", help="Only runs with KEY=VALUE (repeatable)."
    ),
    contract: str | None = typer.Option(
        None,
        "--contract",
        metavar="PREFIX",
        help="Only runs whose contract digest starts with this.",
    ),
    limit: int = typer.Option(50, "--limit", min=1, metavar="N", help="At most N original runs."),
    replays: bool = typer.Option(
        False, "--replays", help="Also list each run's replays, under it."
    ),
    where: list[str] = typer.Option(
        [],
        "--where",
        "-w",
        metavar="FILTER",
        help="Only runs where FIELD OP VALUE holds, e.g. 'params.lr > 0.01' (repeatable).",
    ),
    columns: str | None = typer.Option(
        None,
        "--columns",
        metavar="FIELDS",
        help="Show these fields after the id, e.g. name,params.lr,metrics.loss.last.",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List original runs, newest first, with how many replays each has."""
    from ..index.checked import REINDEX_HINT
    from ..index.query import parse_columns, parse_where
    from ..index.short_ids import short_ids_of
    from ..run.find import list_runs

    warnings: list[str] = []
    filters, chosen = parse_where(where), parse_columns(columns)
    store = open_store(ledger)
    rows = list_runs(
        store,
        name=name,
        status=status.value if status is not None else None,
        tags=_parse_tags(tag),
        contract=contract,
        limit=limit,
        replays=replays,
        warnings=warnings,
        where=filters,
        columns=chosen,
    )
    print_warnings(warnings, REINDEX_HINT)
    short = short_ids_of(store, [r["run_id"] for r in rows])
    for r in rows:
        r["short_id"] = short.get(r["run_id"], r["run_id"])
    if json_out:
        print_json(rows)
        return
    from rich.table import Table
    from rich.text import Text

    from .._units import one_line

    if chosen is not None:
        picked = Table(box=None)
        picked.add_column("id", no_wrap=True)
        for col in chosen:
            picked.add_column(col)
        for r in rows:
            ident = f"↳ {r['short_id']}" if "original" in r else r["short_id"]
            # Cells are Text, never markup: names, tags and config values are user data.
            picked.add_row(ident, *(Text(one_line(_cell(r["columns"].get(c)))) for c in chosen))
        out_console().print(picked)
        return
    # The id column is the short id every command accepts; it is never wrapped or cut.
    table = Table(box=None)
    marks = [
        "replay" if r.get("original") or r["replay_of"] else str(r["replays"] or "") for r in rows
    ]
    show_marks = any(marks)  # the column only when some run was replayed
    cols = ("id", "name", "status", "exit", "started", "wall s", "contract", "replays", "tags")
    for col in cols:
        if col != "replays" or show_marks:
            table.add_column(col, no_wrap=col in ("id", "contract", "started"))
    for r, mark in zip(rows, marks, strict=True):
        cells = [
            f"↳ {r['short_id']}"
            if "original" in r
            else r["short_id"],  # a replay, under its original
            r["name"] or "",
            r["status"],
            "" if r["exit_code"] is None else str(r["exit_code"]),
            (r["started"] or "")[:19],
            "" if r["wall_seconds"] is None else f"{r['wall_seconds']:.1f}",
            (r["contract_digest"] or "")[3:15],
            *([mark] if show_marks else []),
            " ".join(f"{k}={v}" for k, v in r["tags"].items()),
        ]
        table.add_row(*(Text(one_line(cell)) for cell in cells))
    out_console().print(table)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def show(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, unique prefix, or name."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Everything bound to a run: contract, environment, metrics, outputs, replays."""
    from ..index.checked import REINDEX_HINT
    from ..run.show import describe_run, render_run

    store = open_store(ledger)
    info = describe_run(store, run)
    print_warnings(info.get("warnings", []), REINDEX_HINT)
    if json_out:
        print_json(info)
    else:
        render_run(info, out_console())


def log(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, unique prefix, or name."),
    stderr: bool = typer.Option(
        False, "--stderr", help="Show the captured standard error instead."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = typer.Option(
        False, "--json", help="Print {run_id, stream, text} as JSON on stdout."
    ),
) -> None:
    """Print the captured output of a run."""
    from ..errors import UsageError
    from ..run.find import load_run

    store = open_store(ledger)
    _, rec = load_run(store, run)
    stream = "stderr" if stderr else "stdout"
    oid = rec.stderr if stderr else rec.stdout
    if oid is None:
        raise UsageError(f"run {rec.run_id} has no captured {stream}")
    store.objects.verify(oid)  # shown only if it still hashes to what the record names
    if json_out:
        text = store.objects.get_bytes(oid).decode("utf-8", errors="replace")
        print_json({"run_id": rec.run_id, "stream": stream, "text": text})
        return
    store.objects.copy_to(oid, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def register(app: typer.Typer) -> None:
    app.command(
        context_settings={"allow_extra_args": True},
        options_metavar="[OPTIONS] -- CMD [ARGS]...",
    )(record)
    app.command()(ls)
    app.command()(show)
    app.command()(log)
