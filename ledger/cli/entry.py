"""The ``ledger`` program's entry point: ``ledger record -- CMD`` (and ``ls``, ``show``,
``--version``) without typer, else typer.

``ledger record`` runs before every recorded command, so its start-up is overhead on each run;
its plain form is parsed by ``record_cmd.parse_record_argv`` and run without importing typer,
click or the other commands; so is ``ledger replay RUN`` (``replay_cmd.parse_replay_argv``).
Anything else, and any form of ``record`` or ``replay`` those parsers leave alone (help, usage
errors, other options), goes to ``ledger.cli.app.main``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from ._pipes import flush_stdout, quiet_broken_pipe

__all__ = ["main"]


def main() -> NoReturn:
    from .record_cmd import parse_record_argv

    # First: the record parser takes only ``[-L DIR] record ... -- CMD``, which no other parser
    # takes either, and record does not pay for importing theirs.
    args = parse_record_argv(sys.argv[1:])
    if args is not None:
        _run_record(args)
    from .query_cmd import parse_query_argv, run_query

    query = parse_query_argv(sys.argv[1:])  # ls, show, --version: ledger/cli/query_cmd.py
    if query is not None:
        _run_fast(lambda: run_query(query))
    _replay_fast()  # returns when argv is not replay's plain form
    from .app import main as typer_main

    typer_main()
    raise AssertionError("unreachable: the typer entry point exits")


def _replay_fast() -> None:
    from .replay_cmd import fast_options, parse_replay_argv, replay_and_print

    args = parse_replay_argv(sys.argv[1:])
    if args is not None:
        json_out = "--json" in args.flags
        _run_fast(
            lambda: replay_and_print(args.ledger, args.run, fast_options(args), json_out=json_out)
        )


def _run_record(args: object) -> NoReturn:
    from .record_cmd import RecordArgs, run_record

    if not isinstance(args, RecordArgs):
        raise TypeError(f"not record arguments: {type(args).__name__}")
    _run_fast(lambda: run_record(args))


def _run_fast(body: Callable[[], int]) -> NoReturn:
    """The errors ``ledger.cli.app.main`` maps, mapped the same way (the rest are typer's)."""
    from ..errors import LedgerError
    from ._output import report_error

    try:
        rc = body()
    except LedgerError as e:
        report_error(e.message, e.hint)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        report_error("interrupted", None)
        sys.exit(130)
    except BrokenPipeError:
        quiet_broken_pipe()
    except OSError as e:
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        report_error(f"{e.strerror or e}{where}", "check the path and its permissions")
        sys.exit(2)
    flush_stdout()
    sys.exit(rc)
