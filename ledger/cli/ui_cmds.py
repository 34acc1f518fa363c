"""ui, report: the web view of a ledger, live or as a static site."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import LedgerOpt, err_console, open_store

__all__ = ["register"]


def ui(
    port: int = typer.Option(
        0, "--port", "-p", min=0, max=65535, metavar="N", help="Port (default: a free one)."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", metavar="ADDR", help="Address to bind (default: 127.0.0.1)."
    ),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Serve a read-only web view of the ledger: runs, a run, curves, diffs."""
    from ..errors import UsageError
    from ..ui.server import make_server

    store = open_store(ledger)
    try:
        server = make_server(store, host, port)
    except OSError as e:
        raise UsageError(
            f"cannot listen on {host}:{port}: {e.strerror or e}",
            hint="give another --port, or 0 for a free one",
        ) from None
    real = server.server_address[1]
    shown = "localhost" if host in ("127.0.0.1", "localhost") else host
    print(f"ledger ui: http://{shown}:{real}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def report(
    runs: list[str] | None = typer.Argument(
        None, metavar="RUN...", help="Runs: ids, prefixes or names (default: every run)."
    ),
    out: Path = typer.Option(
        ..., "--output", "-o", metavar="DIR", help="Folder to write the site into."
    ),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Write the web view of RUN... (default: every run) as a static, self-contained site
    into DIR."""
    from ..ui.report import write_report

    store = open_store(ledger)
    pages = write_report(store, runs, out)
    err_console().print(
        f"ledger: wrote {len(pages)} files to {out} (open {out / 'index.html'})",
        markup=False,
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.command()(ui)
    app.command()(report)
