"""check and gate: verify a training setup level by level; judge a checkpoint for delivery.

Both exit 0 only when every required check passes, 1 when one fails, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import JsonOpt, LedgerOpt, ledger_dir, open_store, out_console, print_json
from ._output import json_stdout_guard

__all__ = ["register"]


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def check(
    spec: str = typer.Argument(
        ...,
        metavar="SPEC",
        help="module:function returning a ledger.check.Spec, or a YAML file with entry: "
        "and settings.",
    ),
    levels: str | None = typer.Option(
        None,
        "--levels",
        metavar="LIST",
        help="Comma-separated levels to run (static, shapes, one-step, overfit, stability, "
        "distributed, checkpoint, performance, inference); default all but distributed.",
    ),
    keep_going: bool = typer.Option(
        False, "--keep-going", help="Run every level even after one fails."
    ),
    run: str | None = typer.Option(
        None,
        "--run",
        metavar="RUN",
        help="Bind the check record to this run (default: $LEDGER_RUN_ID).",
    ),
    no_store: bool = typer.Option(
        False, "--no-store", help="Do not store a check record (no ledger needed)."
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Verify a training setup level by level; stop at the first failing level.

    Exit 0 if every check passed, 1 if one failed, 2 on a bad spec or option.
    """
    from ..check import run_ladder, store_check
    from ..check.report import item_line

    store = None
    run_id = None
    if not no_store:
        store = open_store(ledger)
        store.check_writable()
        if run is not None:
            from ..run.find import resolve_run

            run_id = resolve_run(store, run)
    elif run is not None:
        run_id = run
    con = out_console()
    with json_stdout_guard(json_out):
        result = run_ladder(
            spec,
            _split(levels),
            keep_going=keep_going,
            run_id=run_id,
            store=store if run is not None else None,
            on_item=None
            if json_out
            else (lambda i: con.print(item_line(i), markup=False, highlight=False)),
        )
        if store is not None:
            result = store_check(store, result)
    rec = result.record
    if json_out:
        print_json({"id": rec.check_id, "oid": result.oid, **rec.to_json()})
    else:
        verdict = (
            "passed" if rec.passed else f"FAILED{f' at {rec.stopped_at}' if rec.stopped_at else ''}"
        )
        where = f"; stored as checks/{rec.check_id}" if result.oid else ""
        con.print(
            f"check {verdict}: {sum(i.passed is True for i in rec.items)}/{len(rec.items)} "
            f"checks passed{where}",
            markup=False,
            highlight=False,
        )
    raise typer.Exit(result.exit_code)


def gate(
    checkpoint: str = typer.Argument(
        ...,
        metavar="CHECKPOINT",
        help="Ledger checkpoint (id, ref, or run id for its latest), a .safetensors/.pt "
        "weights file, or RUN:PATH, such a file a run recorded as an output.",
    ),
    spec: str = typer.Option(
        ...,
        "--spec",
        metavar="SPEC",
        help="Gate spec: a YAML file with entry: and settings, or module:function.",
    ),
    checks: str | None = typer.Option(
        None,
        "--checks",
        metavar="LIST",
        help="Comma-separated checks (export, precision, batching, serving, poison); default all.",
    ),
    html: Path | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write an HTML report."
    ),
    markdown: Path | None = typer.Option(
        None, "--markdown", metavar="FILE", help="Also write a Markdown report."
    ),
    no_store: bool = typer.Option(False, "--no-store", help="Do not store a gate record."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Judge a checkpoint for delivery: ONNX export, precision, batching and memory, KV-cache
    decoding, poison inputs.

    Exit 0 only if every required check passed (CI can block a delivery on it), 1 otherwise.
    """
    from ..check.report import item_line, render_html, render_markdown
    from ..errors import LedgerNotFoundError
    from ..gate import run_gate, store_gate
    from ..store.made import note_made

    store = None
    try:
        store = open_store(ledger)
    except LedgerNotFoundError:
        # Without a ledger only a weights file can be gated, and nothing is stored.
        if not no_store or ledger_dir(ledger) is not None:
            raise
    if store is not None and not no_store:
        store.check_writable()
    con = out_console()
    with json_stdout_guard(json_out):
        result = run_gate(
            checkpoint,
            spec,
            store=store,
            checks=_split(checks),
            on_item=None
            if json_out
            else (lambda i: con.print(item_line(i), markup=False, highlight=False)),
        )
        if store is not None and not no_store:
            result = store_gate(store, result)
    rec = result.record
    for path, render in ((html, render_html), (markdown, render_markdown)):
        if path is not None:
            path.write_text(render(rec), encoding="utf-8")
            if store is not None:  # ledger's output, not the project's code
                note_made(store.root, path, "report")
    if json_out:
        print_json({"id": rec.gate_id, "oid": result.oid, **rec.to_json()})
    else:
        failed = [i for i in rec.items if i.required and i.passed is False]
        verdict = "PASSED" if rec.passed else f"FAILED ({len(failed)} required check(s) failed)"
        where = f"; stored as gates/{rec.gate_id}" if result.oid else ""
        con.print(
            f"gate {verdict} for {rec.checkpoint_digest[:15]}…{where}",
            markup=False,
            highlight=False,
        )
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command()(check)
    app.command()(gate)
