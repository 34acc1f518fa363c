"""record, ls, show, log: commands about runs."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ._choices import RunStatus
from ._common import (
    JsonOpt,
    LedgerOpt,
    ledger_dir,
    open_store,
    print_json,
)
from .query_cmd import LsArgs, ShowArgs, run_ls, run_show
from .record_cmd import RecordArgs, run_record

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
    auto_inputs: bool = typer.Option(
        False,
        "--auto-inputs",
        help="Store the files the run read that a replay would not have as inputs.",
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
        auto_inputs=auto_inputs,
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
    search: str | None = typer.Option(
        None,
        "--search",
        metavar="TEXT",
        help="Only runs whose name, tags, command or notes hold these words (full-text).",
    ),
    retracted: bool = typer.Option(
        False, "--retracted", help="Also list retracted runs (`ledger retract`), marked."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List original runs, newest first, with how many replays each has."""
    # The same body runs without typer for the plain forms (ledger/cli/query_cmd.py).
    run_ls(
        LsArgs(
            name=name,
            status=status.value if status is not None else None,
            tags=tag,
            contract=contract,
            limit=limit,
            replays=replays,
            where=where,
            columns=columns,
            search=search,
            ledger=ledger_dir(ledger),
            json_out=json_out,
            retracted=retracted,
        )
    )


def show(
    run: str | None = typer.Argument(
        None, metavar="RUN", help="Run id, unique prefix, or name (default: the newest run)."
    ),
    all_files: bool = typer.Option(
        False, "--all", help="List every untracked file of the run's code, not the first few."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Everything bound to a run (default: the newest): contract, environment, metrics,
    outputs, replays."""
    run_show(ShowArgs(run=run, ledger=ledger_dir(ledger), json_out=json_out, all_files=all_files))


def log(
    run: str | None = typer.Argument(
        None, metavar="RUN", help="Run id, unique prefix, or name (default: the newest run)."
    ),
    stderr: bool = typer.Option(
        False, "--stderr", help="Show the captured standard error instead."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = typer.Option(
        False, "--json", help="Print {run_id, stream, text} as JSON on stdout."
    ),
    raw: bool = typer.Option(
        False,
        "--raw",
        help="Write the captured bytes as they are, terminal escape sequences included.",
    ),
) -> None:
    """Print the captured output of a run (default: the newest).

    Control characters other than newline and tab are shown as \\xNN escapes, so a log cannot
    restyle, retitle or rewrite the terminal it is read on; --raw writes the bytes as captured.
    """
    from ..errors import UsageError
    from ..run.find import load_run, newest_run

    store = open_store(ledger)
    _, rec = load_run(store, run if run is not None else newest_run(store))
    stream = "stderr" if stderr else "stdout"
    oid = rec.stderr if stderr else rec.stdout
    if oid is None:
        raise UsageError(f"run {rec.run_id} has no captured {stream}")
    store.objects.verify(oid)  # shown only if it still hashes to what the record names
    if json_out:
        text = store.objects.get_bytes(oid).decode("utf-8", errors="replace")
        print_json({"run_id": rec.run_id, "stream": stream, "text": text})
        return
    if raw:
        store.objects.copy_to(oid, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    from ._output import VisibleWriter

    out = VisibleWriter(sys.stdout)
    with store.objects.open(oid) as f:
        while chunk := f.read(1 << 16):
            out.write(chunk)
    out.close()


def register(app: typer.Typer) -> None:
    app.command(
        context_settings={"allow_extra_args": True},
        options_metavar="[OPTIONS] -- CMD [ARGS]...",
    )(record)
    app.command()(ls)
    app.command()(show)
    app.command()(log)
