"""checkpoints, checkpoint export / import-dcp: list a run's checkpoints; export one for other
tools; store a torch.distributed.checkpoint folder as one."""

from __future__ import annotations

from pathlib import Path

import typer

from .._units import human_bytes
from ._choices import ExportFormat
from ._common import JsonOpt, LedgerOpt, open_store, out_console, print_json
from ._output import progress

__all__ = ["register"]

checkpoint_app = typer.Typer(
    name="checkpoint", help="Work with one checkpoint.", no_args_is_help=True
)


def checkpoints(
    run: str = typer.Argument(..., metavar="RUN", help="Run id (or a unique prefix)."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List a run's checkpoints: step, size, bytes newly written, dedup ratio."""
    from .._columns import Column, console_width, rich_table
    from ..errors import UnknownIdError
    from ..run.find import resolve_run
    from ..torch.checkpoint.export import checkpoint_runs, list_checkpoints

    store = open_store(ledger)
    # The run is found the way every command finds one (id, prefix, short id, name); a run
    # that saved no checkpoint has an empty list, not an error.
    try:
        run = resolve_run(store, run)
        recorded = True
    except UnknownIdError:
        recorded = False  # checkpoint refs without a run record: list_checkpoints decides
    if recorded and run not in checkpoint_runs(store):
        rows = []
    else:
        rows = list_checkpoints(run, store=store)
    if json_out:
        print_json([{**info.to_json(), "latest": latest} for info, latest in rows])
        return
    con = out_console()
    if not rows:
        con.print(f"Run {run} has no checkpoints.")
        return
    con.print(f"checkpoints of {rows[0][0].run_id}")
    # As `ledger ls`: plain columns that read the same in a log, fitted to the width by the
    # one rule of ledger._columns (the id and step stay longest).
    cols = [
        Column("step", 1, wrap=False, justify="right"),
        Column("id", 0, wrap=False),
        Column("ranks", 4, wrap=False),
        Column("size", 2, wrap=False, justify="right"),
        Column("new", 3, wrap=False, justify="right"),
        Column("dedup", 5, wrap=False),
        Column("created", 6, wrap=False),
    ]
    table = rich_table(
        cols,
        [
            [
                str(info.step),
                info.oid[:15] + (" (latest)" if latest else ""),
                str(info.world_size),
                human_bytes(info.bytes_total),
                human_bytes(info.bytes_new),
                f"{info.dedup_ratio:.0%}",
                info.created,
            ]
            for info, latest in rows
        ],
        console_width(con),
    )
    con.print(table)


def export(
    ident: str = typer.Argument(
        ...,
        metavar="ID",
        help="Checkpoint id or prefix, a ref (checkpoints/<run>/step-<n>), or a run id.",
    ),
    fmt: ExportFormat = typer.Option(
        ..., "--format", "-f", help="File format to write.", case_sensitive=False
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        metavar="FILE",
        help="File to write (replaced atomically); for dcp a new folder.",
    ),
    rank: int = typer.Option(0, "--rank", metavar="N", help="Which rank's shard to export."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Export one checkpoint's tensors (verified) as safetensors, a torch .pt state dict or a
    torch.distributed.checkpoint (DCP) folder; sharded (DTensor) tensors are written whole."""
    from ..torch.checkpoint.export import export_checkpoint

    with progress(f"exporting {ident} as {fmt.value}"):
        info, path = export_checkpoint(
            ident,
            fmt=fmt.value,
            out=out,
            store=open_store(ledger),
            rank=rank,
        )
    if json_out:
        print_json(
            {"checkpoint": info.oid, "step": info.step, "format": fmt.value, "out": str(path)}
        )
    else:
        out_console().print(
            f"Exported checkpoint {info.oid[:15]} (run {info.run_id}, step {info.step}, "
            f"rank {rank}) to [bold]{path}[/] as {fmt.value}"
        )


def import_dcp(
    folder: Path = typer.Argument(..., metavar="DIR", help="A DCP checkpoint folder."),
    run: str = typer.Option(..., "--run", metavar="RUN", help="Run id the checkpoint joins."),
    step: int = typer.Option(0, "--step", metavar="N", help="Its step number."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Store a torch.distributed.checkpoint folder as a ledger checkpoint (content-addressed,
    tensors whole). Its .metadata pickle is read with DCP's own types only, never unpickled
    in full; a folder that needs more is refused."""
    from ..torch.checkpoint.dcp import import_dcp as run_import

    with progress(f"importing {folder}"):
        info = run_import(folder, step=step, store=open_store(ledger), run_id=run)
    if json_out:
        print_json(info.to_json())
    else:
        out_console().print(
            f"Imported {folder} as checkpoint {info.oid[:15]} (run {info.run_id}, step "
            f"{info.step}, {info.tensors} tensors, {human_bytes(info.bytes_total)})"
        )


def register(app: typer.Typer) -> None:
    app.command()(checkpoints)
    checkpoint_app.command()(export)
    checkpoint_app.command("import-dcp")(import_dcp)
    app.add_typer(checkpoint_app)
