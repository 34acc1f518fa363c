"""``ledger record``'s body, and a parser for its common form that needs no typer.

Every millisecond before the launch and after the exit of a recorded command is overhead the
user pays on each run (bench/bench_record.py); typer, click and the other command modules take
about 0.15 s to import. ``parse_record_argv`` reads the plain form ``ledger [-L DIR] record
[OPTIONS] -- CMD...`` exactly as the typer command does and answers ``None`` for anything else
(``--help``, an unknown or malformed option, no ``--``), which then goes through typer: help,
usage errors and their wording stay typer's. tests/cli/test_cli_record_fast.py checks the two
parsers agree.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .._units import human_seconds
from ._output import is_tty, progress_stages

__all__ = ["RecordArgs", "parse_record_argv", "parse_tags", "run_record"]


@dataclass
class RecordArgs:
    """The values of ``ledger record``'s options, as the typer command receives them."""

    command: list[str]
    name: str | None = None
    inputs: list[Path] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    configs: list[Path] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    env_names: list[str] = field(default_factory=list)
    require_clean: bool = False
    tags: list[str] = field(default_factory=list)
    no_store_inputs: bool = False
    auto_inputs: bool = False
    no_defaults: bool = False
    ledger: Path | None = None  # the command's own --ledger, else the global one
    json_out: bool = False


# option spelling -> (field, kind): "str" (last wins), "path"/"list"/"pathlist" (repeatable)
_VALUED = {
    "--name": ("name", "str"),
    "-n": ("name", "str"),
    "--input": ("inputs", "pathlist"),
    "-i": ("inputs", "pathlist"),
    "--output": ("outputs", "pathlist"),
    "-o": ("outputs", "pathlist"),
    "--config": ("configs", "pathlist"),
    "-c": ("configs", "pathlist"),
    "--metric": ("metrics", "list"),
    "-m": ("metrics", "list"),
    "--env": ("env_names", "list"),
    "-e": ("env_names", "list"),
    "--tag": ("tags", "list"),
    "-t": ("tags", "list"),
    "--ledger": ("ledger", "path"),
    "-L": ("ledger", "path"),
}
_FLAGS = {
    "--require-clean": "require_clean",
    "--no-store-inputs": "no_store_inputs",
    "--auto-inputs": "auto_inputs",
    "--no-defaults": "no_defaults",
    "--json": "json_out",
}


def _take_value(argv: list[str], i: int) -> tuple[str, str, int] | None:
    """(option, value, next index) for ``--opt value``, ``--opt=value`` or ``-o value``."""
    arg = argv[i]
    if arg.startswith("--") and "=" in arg:
        opt, _, value = arg.partition("=")
        nxt = i + 1
    else:
        if i + 1 >= len(argv):
            return None
        opt, value, nxt = arg, argv[i + 1], i + 2
    # A value that looks like an option, or an empty one, is left to typer's own rules.
    if not value or value.startswith("-"):
        return None
    return opt, value, nxt


def parse_record_argv(argv: list[str]) -> RecordArgs | None:
    """``argv`` (without the program name) as ``ledger record`` reads it, or ``None`` when it
    is not the plain form this parser takes on (typer then parses it)."""
    i, global_ledger = 0, None
    while i < len(argv) and argv[i] != "record":  # the root's only valued option: --ledger
        arg = argv[i]
        if not (arg in ("-L", "--ledger") or arg.startswith("--ledger=")):
            return None
        got = _take_value(argv, i)
        if got is None:
            return None
        global_ledger, i = Path(got[1]), got[2]
    if i >= len(argv):
        return None
    values: dict[str, object] = {}
    lists: dict[str, list[object]] = {}
    i += 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            command = argv[i + 1 :]
            if not command:
                return None  # typer's path reports the missing command
            out = RecordArgs(command=list(command), ledger=global_ledger)
            for name, value in values.items():
                setattr(out, name, value)
            for name, items in lists.items():
                setattr(out, name, items)
            return out
        if arg in _FLAGS:
            values[_FLAGS[arg]] = True
            i += 1
            continue
        opt = arg.partition("=")[0] if arg.startswith("--") else arg
        if opt not in _VALUED:
            return None  # --help, an unknown option, a positional argument before --, -nNAME
        got = _take_value(argv, i)
        if got is None:
            return None
        _, value, i = got
        name, kind = _VALUED[opt]
        if kind == "str":
            values[name] = value
        elif kind == "path":
            values[name] = Path(value)
        else:
            lists.setdefault(name, []).append(Path(value) if kind == "pathlist" else value)
    return None  # no `--`: the command's own options could be read as ours; typer decides


def parse_tags(tags: list[str]) -> dict[str, str]:
    from ..errors import UsageError

    out = {}
    for t in tags:
        key, sep, value = t.partition("=")
        if not sep or not key:
            raise UsageError(f"--tag {t!r} is not KEY=VALUE", hint="e.g. --tag dataset=cifar10")
        out[key] = value
    return out


def run_record(args: RecordArgs) -> int:
    """Record ``args.command`` and print the one-line summary; returns the exit code."""
    from ..capture import gpus

    gpus.prefetch()  # nvidia-smi runs while the recorder imports; the fingerprint takes it
    from ..run.project_config import RecordDefaults, load_project_config
    from ..run.record import RecordOptions
    from ..run.record import record as do_record
    from ..store import Store

    store = Store.open(args.ledger)
    defaults = RecordDefaults() if args.no_defaults else load_project_config(store.root).record
    opts = RecordOptions(
        command=args.command,
        name=args.name,
        inputs=[*defaults.input, *args.inputs],
        outputs=[*defaults.output, *args.outputs],
        configs=[*defaults.config, *args.configs],
        metrics=[*defaults.metric, *args.metrics],
        env_names=list(args.env_names),
        require_clean=args.require_clean,
        tags={**defaults.tags, **parse_tags(args.tags)},
        store_inputs=not args.no_store_inputs,
        auto_inputs=args.auto_inputs,
    )
    from ..capture.scheduler import launcher_warning

    outside = launcher_warning([str(a) for a in args.command])
    if outside:  # before the command: srun may run for days
        sys.stderr.write(f"ledger: warning: {outside}\n")
    with progress_stages():
        result = do_record(opts, store)
    run = result.run_json  # as stored: printing it needs no model (nor pydantic)
    run_id, status, exit_code = run["run_id"], run["status"], run["exit_code"]
    for warning in result.warnings:  # e.g. a --metric that matched nothing
        sys.stderr.write(f"ledger: warning: {warning}\n")
    if result.sweep_error:
        sys.stderr.write(
            "ledger: warning: the Hydra multirun's jobs were not all recorded as runs "
            f"({result.sweep_error}); the sweep run {run_id} holds their output\n"
        )
    if args.json_out:
        sys.stderr.write(
            json.dumps(
                {
                    "run_id": run_id,
                    "record": result.record_oid,
                    "status": status,
                    "exit_code": exit_code,
                    **({"sweep_jobs": result.sweep_jobs} if result.sweep_jobs else {}),
                }
            )
            + "\n"
        )
    else:
        colour = "green" if status == "succeeded" else "red"
        tail = (
            f" (exit {exit_code if exit_code is not None else 'signal ' + str(run['signal'])},"
            f" {human_seconds(run['wall_seconds'])}, {len(run['metrics'])} metric series)"
        )
        if is_tty(sys.stderr):
            from ._output import console

            head = f"ledger: run [bold]{run_id}[/] [{colour}]{status}[/]"
            console(stderr=True).print(head + tail)
        else:  # the same line without colour, and without importing rich (~0.07 s)
            sys.stderr.write(f"ledger: run {run_id} {status}{tail}\n")
        if result.sweep_jobs:
            sys.stderr.write(
                f"ledger: Hydra multirun: {len(result.sweep_jobs)} job run(s); "
                f"`ledger ls --tag sweep={run_id}` lists them\n"
            )
    return result.exit_code
