"""The ``ledger`` command. Parses, calls the library, prints; decides nothing itself."""

from __future__ import annotations

import sys

import typer

from . import attest_cmds, audit_cmds, checkpoint_cmds, replay_cmds, run_cmds, store_cmds

__all__ = ["app", "main"]

app = typer.Typer(
    name="ledger",
    help="Make ML training runs auditable and replayable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
store_cmds.register(app)
run_cmds.register(app)
replay_cmds.register(app)
audit_cmds.register(app)
checkpoint_cmds.register(app)
attest_cmds.register(app)


def main() -> None:
    """Entry point: LedgerError becomes a one-line message and its documented exit code."""
    from ..errors import LedgerError

    try:
        rc = app(standalone_mode=False)
    except LedgerError as e:
        _report(e.message, e.hint)
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _report("interrupted", None)
        sys.exit(130)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except Exception as e:
        # typer's own usage errors (bad option, missing argument) know how to show themselves.
        show = getattr(e, "show", None)
        if callable(show) and isinstance(getattr(e, "exit_code", None), int):
            show()
            sys.exit(e.exit_code)  # type: ignore[attr-defined]
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


def _report(message: str, hint: str | None) -> None:
    sys.stderr.write(f"ledger: error: {message}\n")
    if hint:
        sys.stderr.write(f"ledger: hint: {hint}\n")
