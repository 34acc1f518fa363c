"""audit: check a paper's claims against recorded runs. Exit 0 only if every claim is supported."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import (
    JsonOpt,
    LedgerOpt,
    finite_non_negative,
    open_store,
    out_console,
    print_json,
)
from ._output import json_stdout_guard, print_warnings, progress

__all__ = ["register"]


def audit(
    claims: Path = typer.Argument(
        ...,
        metavar="CLAIMS.yaml",
        help="YAML claims file (see docs/how-to/audit-claims.md).",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
    replay: bool = typer.Option(
        False, "--replay", help="Replay every run behind a claim instead of reading its verdict."
    ),
    margin: float | None = typer.Option(
        None,
        "--margin",
        min=0.0,
        metavar="FLOAT",
        callback=finite_non_negative,
        help="Equivalence margin in metric units for claims without one.",
    ),
    html: Path | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write a self-contained HTML report."
    ),
    markdown: Path | None = typer.Option(
        None, "--markdown", metavar="FILE", help="Also write a Markdown report."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Check claims like "93.1 ± 0.2 over 5 seeds" or "A beats B" against the recorded runs.

    Exit 0 if every claim is supported, 1 if any is not, 2 if the claims file has mistakes.
    """
    # The ledger is opened before the statistics stack (numpy, scipy) loads: a wrong path or a
    # missing ledger is reported at once.
    store = open_store(ledger)
    store.check_writable()
    from ..audit import audit as run_audit
    from ..audit import render_html, render_markdown, render_text
    from ..audit.replays import bitwise_replayer
    from ..store.made import note_made

    # No progress display while replays run: their own output streams to the terminal.
    with json_stdout_guard(json_out), progress("auditing claims", enabled=not replay):
        result = run_audit(
            store,
            claims,
            replay=replay,
            margin=margin,
            replayer=bitwise_replayer if replay else None,
        )
    print_warnings(list(result.warnings), hint="run `ledger verify` to see every problem")
    for path, render in ((html, render_html), (markdown, render_markdown)):
        if path is not None:
            path.write_text(render(result), encoding="utf-8")
            note_made(store.root, path, "report")  # ledger's output, not the project's code
    if json_out:
        print_json(result.to_json())
    else:
        render_text(result, out_console())
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command()(audit)
