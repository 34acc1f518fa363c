"""The ``ledger`` program's entry point: ``ledger record -- CMD`` (and ``ls``, ``show``,
``--version``) without typer, else typer.

``ledger record`` runs before every recorded command, so its start-up is overhead on each run;
its plain form is parsed by ``record_cmd.parse_record_argv`` and run without importing typer,
click or the other commands. Anything else, and any form of ``record`` that parser leaves
alone (help, usage errors), goes to ``ledger.cli.app.main``.
"""

from __future__ import annotations

import sys
from typing import NoReturn

from ._pipes import flush_stdout, quiet_broken_pipe

__all__ = ["main"]


def main() -> NoReturn:
    from .query_cmd import parse_query_argv, run_query

    query = parse_query_argv(sys.argv[1:])  # ls, show, --version: ledger/cli/query_cmd.py
    if query is not None:
        run_query(query)
    from .record_cmd import parse_record_argv

    args = parse_record_argv(sys.argv[1:])
    if args is None:
        from .app import main as typer_main

        typer_main()
        raise AssertionError("unreachable: the typer entry point exits")
    _run_record(args)


def _run_record(args: object) -> NoReturn:
    """The errors ``ledger.cli.app.main`` maps, mapped the same way (the rest are typer's)."""
    from ..errors import LedgerError
    from ._output import report_error
    from .record_cmd import RecordArgs, run_record

    assert isinstance(args, RecordArgs)
    try:
        rc = run_record(args)
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
