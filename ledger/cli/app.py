"""The ``ledger`` command. Parses, calls the library, prints; decides nothing itself."""

from __future__ import annotations

import sys

import typer

from . import store_cmds

__all__ = ["app", "main"]

app = typer.Typer(
    name="ledger",
    help="Make ML training runs auditable and replayable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
store_cmds.register(app)


def main() -> None:
    """Entry point: LedgerError becomes a one-line message and its documented exit code."""
    from ..errors import LedgerError

    try:
        app(standalone_mode=False)
    except LedgerError as e:
        _report(e.message, e.hint)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        _report("interrupted", None)
        sys.exit(130)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except Exception as e:  # click's own usage errors and aborts
        import click

        if isinstance(e, click.exceptions.Abort):
            sys.exit(130)
        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise
    sys.exit(0)


def _report(message: str, hint: str | None) -> None:
    sys.stderr.write(f"ledger: error: {message}\n")
    if hint:
        sys.stderr.write(f"ledger: hint: {hint}\n")
