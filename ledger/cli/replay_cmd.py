"""``ledger replay``'s body and printer, and a parser for its plain form that needs no typer.

Everything before the replayed command starts is overhead on each replay (bench/bench_replay.py);
typer, click and the other command modules take about 0.05 s of CPU to import and build.
``parse_replay_argv`` reads ``ledger [-L DIR] replay RUN`` with the flags below exactly as the
typer command does and answers ``None`` for anything else (``--help``, ``--mode``, any other
option or a malformed one), which then goes through typer: help, usage errors and their wording
stay typer's. tests/cli/test_cli_replay_fast.py checks the two parsers agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._output import console, json_stdout_guard, print_json, progress_stages

if TYPE_CHECKING:
    from ..replay.options import ReplayOptions

__all__ = ["FastReplayArgs", "parse_replay_argv", "replay_and_print"]


@dataclass
class FastReplayArgs:
    """The plain form's values: the run, its flags, the ledger (its own ``-L``, else the
    global one)."""

    run: str
    flags: set[str] = field(default_factory=set)
    ledger: Path | None = None


# The flags the plain form takes; each is an option of the typer command with the same name.
FLAGS = ("--json", "--keep-workspace", "--strict-env", "--include-logs")


def _ledger_value(argv: list[str], i: int) -> tuple[Path, int] | None:
    """(path, next index) for ``-L DIR``, ``--ledger DIR`` or ``--ledger=DIR``; None otherwise
    (a value that looks like an option, or an empty one, is left to typer's rules)."""
    arg = argv[i]
    if arg.startswith("--ledger="):
        value, nxt = arg.partition("=")[2], i + 1
    elif arg in ("-L", "--ledger") and i + 1 < len(argv):
        value, nxt = argv[i + 1], i + 2
    else:
        return None
    if not value or value.startswith("-"):
        return None
    return Path(value), nxt


def parse_replay_argv(argv: list[str]) -> FastReplayArgs | None:
    """``argv`` (without the program name) as ``ledger replay`` reads it, or ``None`` when it
    is not the plain form this parser takes on (typer then parses it)."""
    i, ledger = 0, None
    while i < len(argv) and argv[i] != "replay":  # the root's only valued option: --ledger
        got = _ledger_value(argv, i)
        if got is None:
            return None
        ledger, i = got
    if i >= len(argv):
        return None
    run: str | None = None
    flags: set[str] = set()
    i += 1
    while i < len(argv):
        arg = argv[i]
        if arg in FLAGS:
            flags.add(arg)
            i += 1
        elif arg.startswith("-"):  # -L/--ledger, or anything typer must read (--help, --)
            got = _ledger_value(argv, i)
            if got is None:
                return None
            ledger, i = got
        elif run is None:
            run, i = arg, i + 1
        else:
            return None  # a second argument: typer's usage error
    if run is None:
        return None
    return FastReplayArgs(run=run, flags=flags, ledger=ledger)


def fast_options(args: FastReplayArgs) -> ReplayOptions:
    """The options the typer command builds for the same argument list (its defaults)."""
    from ..replay.options import ReplayOptions

    return ReplayOptions(
        keep_workspace="--keep-workspace" in args.flags,
        strict_env="--strict-env" in args.flags,
        include_logs="--include-logs" in args.flags,
        warm=() if "--json" in args.flags else PRINTER_MODULES,
        on_localize=say_localize,
    )


def say_localize(line: str) -> None:
    """What --localize is about to run (its cost), on stderr before it starts (both parsers)."""
    from ._common import err_console

    err_console().print(line, markup=False, highlight=False)


# The verdict is printed through rich: imported while the replayed command runs.
PRINTER_MODULES = ("rich.console", "rich.markup")


def replay_and_print(
    ledger: Path | None, run: str, opts: ReplayOptions, *, json_out: bool, jobs: int = 1
) -> int:
    """Replay ``run`` and print the verdict (JSON with ``json_out``); returns the exit code."""
    from ..capture import gpus

    gpus.prefetch()  # nvidia-smi runs while the replay imports; the drift check takes it
    from ..replay.engine import replay as do_replay
    from ..store import Store

    store = Store.open(ledger)
    # With --json the replayed program's own output goes to stderr: stdout is the verdict only.
    # Progress only where no other seed's command can be writing to the terminal meanwhile.
    with json_stdout_guard(json_out), progress_stages(enabled=jobs == 1):
        outcome = do_replay(store, run, opts)
    v = outcome.verdict
    if json_out:
        print_json({"verdict": outcome.verdict_oid, **v.to_json()})
        return outcome.exit_code
    from rich.markup import escape

    from .._units import LINE_MAX, one_line

    con = console()
    colour = {"reproduced": "green", "inconclusive": "yellow"}.get(v.outcome, "red")
    # A verdict that compared nothing but the exit status says so in its first words.
    only_exit = ", exit status only" if "exit-status-only" in v.labels else ""
    con.print(
        f"[bold {colour}]{v.outcome.upper()}[/] ({v.mode}{only_exit}) {v.original} → "
        + ", ".join(v.replays)
    )
    con.print(one_line(v.summary, LINE_MAX), markup=False)  # names metrics and paths: user data
    loc = v.settings.get("localization")
    if isinstance(loc, dict) and loc.get("found"):  # the summary holds the chain: what to do
        con.print(f"next: {loc['suggestion']} (see {loc['doc']})", markup=False)
    for label in v.labels:
        con.print(f"[yellow]label[/] {escape(one_line(label, LINE_MAX))}")
    numeric = [d for d in v.environment_drift if d.get("affects_numerics")]
    if numeric:
        con.print(
            f"[yellow]environment differs[/] in {len(numeric)} numerics field(s): "
            + escape(", ".join(d["field"] for d in numeric[:6]))
        )
    for note in v.notes:
        con.print(f"[dim]note[/] {escape(one_line(note, LINE_MAX))}")
    if outcome.workspaces and opts.keep_workspace:
        con.print(
            "workspace kept at " + ", ".join(str(w) for w in outcome.workspaces), markup=False
        )
    con.print(f"verdict record {outcome.verdict_oid}")
    return outcome.exit_code
