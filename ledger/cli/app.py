"""The ``ledger`` command. Parses, calls the library, prints; decides nothing itself."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import typer

try:  # typer >= 0.20 ships its own copy of click
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as _cx  # type: ignore[no-redef]

from . import (
    attest_cmds,
    audit_cmds,
    check_cmds,
    checkpoint_cmds,
    config_cmds,
    curate_cmds,
    read_cmds,
    remote_cmds,
    replay_cmds,
    run_cmds,
    share_cmds,
    store_cmds,
    ui_cmds,
)
from ._common import set_global_ledger
from ._output import report_error
from ._pipes import flush_stdout, quiet_broken_pipe

__all__ = ["app", "command", "main"]

app = typer.Typer(
    name="ledger",
    help="Make ML training runs auditable and replayable.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # click's plain help: real metavars (FLOAT, PATH, [a|b|c]), no `<bool>` on flags, no boxes
    # that wrap ids when help is piped.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["--help", "-h"]},
)


def _version(value: bool) -> None:
    if value:
        from .._version import __version__

        sys.stdout.write(f"ledger {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    ledger: Path | None = typer.Option(
        None,
        "--ledger",
        "-L",
        metavar="DIR",
        help="Ledger directory for any command (default: $LEDGER_DIR, else the nearest .ledger "
        "above here). Also accepted after the command.",
        show_default=False,
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Make ML training runs auditable and replayable."""
    set_global_ledger(ledger)


store_cmds.register(app)
run_cmds.register(app)
curate_cmds.register(app)
read_cmds.register(app)
replay_cmds.register(app)
audit_cmds.register(app)
checkpoint_cmds.register(app)
attest_cmds.register(app)
config_cmds.register(app)
check_cmds.register(app)
share_cmds.register(app)
remote_cmds.register(app)
ui_cmds.register(app)


def _plain_arguments(cmd: Any) -> None:
    """Arguments read ``RUN`` in the usage line and in --help, as the reference documents them:
    typer writes a required one as ``{RUN}`` and adds ``<str>`` after it."""
    from typer.core import TyperArgument

    class PlainArgument(TyperArgument):
        def _usage_display_name(self) -> str:
            name = self.metavar or (self.name or "").upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        def _rich_display_name(self) -> str:
            return self.metavar or (self.name or "").upper()

        def display_type_rich(self, ctx: Any) -> str | None:
            return None

    for param in cmd.params:
        if type(param) is TyperArgument:
            param.__class__ = PlainArgument
    for sub in getattr(cmd, "commands", {}).values():
        _plain_arguments(sub)


@functools.cache
def command() -> Any:
    """The click command ``ledger`` runs: typer's, with plain argument names."""
    cmd = typer.main.get_command(app)
    _plain_arguments(cmd)
    return cmd


def _usage_hint(e: _cx.UsageError) -> str:
    path = e.ctx.command_path if e.ctx is not None else "ledger"
    return f"`{path} --help` lists the arguments and options"


def main() -> None:
    """Entry point: every error becomes ``ledger: error: …`` (+ hint) and its documented exit
    code."""
    from ..errors import LedgerError

    set_global_ledger(None)
    try:
        rc = command().main(standalone_mode=False, prog_name="ledger")
    except LedgerError as e:
        report_error(e.message, e.hint)
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        report_error("interrupted", None)
        sys.exit(130)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except _cx.NoArgsIsHelpError as e:
        # `ledger` or `ledger checkpoint` alone: the help is the answer, not an error.
        if e.ctx is None:
            raise TypeError("a help request without its command context") from e
        sys.stdout.write(e.ctx.get_help() + "\n")
        sys.exit(0)
    except _cx.UsageError as e:
        # typer validates through pydantic, whose messages start with "Value error, ".
        report_error(e.format_message().replace("Value error, ", ""), _usage_hint(e))
        sys.exit(2)
    except _cx.ClickException as e:
        report_error(e.format_message(), None)
        sys.exit(2 if e.exit_code == 1 else e.exit_code)
    except BrokenPipeError:
        quiet_broken_pipe()
    except SystemExit as e:
        # typer catches EPIPE itself, swaps stdout for click's PacifyFlushWrapper and exits 1,
        # which reads as "a check failed": a closed pipe is 141 like any other reader leaving.
        if e.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            quiet_broken_pipe()
        raise
    except OSError as e:
        # A file the user named (report, export target) could not be written or read.
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        report_error(f"{e.strerror or e}{where}", "check the path and its permissions")
        sys.exit(2)
    flush_stdout()
    sys.exit(rc if isinstance(rc, int) else 0)
