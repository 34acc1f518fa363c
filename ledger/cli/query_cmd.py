"""``ledger ls`` and ``ledger show``'s bodies, and a parser for their common forms that needs no
typer; ``ledger --version`` too.

A look at the ledger should cost about what finding a page of runs costs: typer, click and
pydantic, with every command module, take longer to import than ``ls`` takes to read 50 runs
out of 100,000 (bench/bench_scale.py). ``parse_query_argv`` reads ``ledger [-L DIR] ls|show
[OPTIONS]`` exactly as the typer commands do and answers ``None`` for anything it does not take
on (``--help``, an unknown option or choice, a malformed or dash-led value, ``-wVALUE``, a
missing or extra argument), which typer then parses: help, usage errors and their wording stay
typer's. The bodies below are the typer commands' bodies too (``run_cmds.ls`` and ``show``
call them), and errors map to the same lines and exit codes as ``app.main`` maps them.
tests/cli/test_cli_fast_query.py runs both paths over the same arguments and compares bytes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "LsArgs",
    "ShowArgs",
    "VersionArgs",
    "parse_query_argv",
    "run_ls",
    "run_query",
    "run_show",
]

# ``ledger ls --status``'s choices (``_choices.RunStatus``, kept equal by a test).
STATUSES = ("running", "succeeded", "failed", "killed", "interrupted", "abandoned")


@dataclass
class LsArgs:
    """The values of ``ledger ls``'s options, as the typer command receives them."""

    name: str | None = None
    status: str | None = None
    tags: list[str] = field(default_factory=list)
    contract: str | None = None
    limit: int = 50
    replays: bool = False
    where: list[str] = field(default_factory=list)
    columns: str | None = None
    search: str | None = None
    ledger: Path | None = None  # the command's own --ledger, else the global one
    json_out: bool = False
    retracted: bool = False  # also the runs `ledger retract` hid


@dataclass
class ShowArgs:
    run: str | None  # None: the newest run
    ledger: Path | None = None
    json_out: bool = False
    all_files: bool = False  # every untracked file by name, not the first few


@dataclass
class VersionArgs:
    pass


# option spelling -> (field, kind): "str"/"path"/"int"/"status" (last wins), "list" (repeatable)
_LS_VALUED = {
    "--name": ("name", "str"),
    "--status": ("status", "status"),
    "--tag": ("tags", "list"),
    "--contract": ("contract", "str"),
    "--limit": ("limit", "int"),
    "--where": ("where", "list"),
    "-w": ("where", "list"),
    "--columns": ("columns", "str"),
    "--search": ("search", "str"),
    "--ledger": ("ledger", "path"),
    "-L": ("ledger", "path"),
}
_LS_FLAGS = {"--replays": "replays", "--json": "json_out", "--retracted": "retracted"}
_SHOW_VALUED = {"--ledger": ("ledger", "path"), "-L": ("ledger", "path")}
_SHOW_FLAGS = {"--json": "json_out", "--all": "all_files"}
_NUMBER = re.compile(r"[0-9]+")


def _take_value(argv: list[str], i: int) -> tuple[str, int] | None:
    """(value, next index) for ``--opt value``, ``--opt=value`` or ``-o value``; None for a
    value typer may read otherwise (missing, empty, or starting with a dash)."""
    arg = argv[i]
    if arg.startswith("--") and "=" in arg:
        value, nxt = arg.partition("=")[2], i + 1
    elif i + 1 < len(argv):
        value, nxt = argv[i + 1], i + 2
    else:
        return None
    if not value or value.startswith("-"):
        return None
    return value, nxt


def _converted(kind: str, value: str) -> object | None:
    """``value`` as the typer option of ``kind`` takes it, or None where typer would refuse
    it (or might read it otherwise)."""
    if kind == "int":
        return int(value) if _NUMBER.fullmatch(value) and int(value) >= 1 else None
    if kind == "status":
        return value if value in STATUSES else None
    if kind == "path":
        return Path(value)
    return value


def _parse_command(
    argv: list[str],
    valued: dict[str, tuple[str, str]],
    flags: dict[str, str],
) -> tuple[dict[str, object], list[str]] | None:
    """(option values, positional arguments) of one command's arguments, or None."""
    values: dict[str, object] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            positional.append(arg)
            i += 1
            continue
        if arg in flags:
            values[flags[arg]] = True
            i += 1
            continue
        opt = arg.partition("=")[0] if arg.startswith("--") else arg
        if opt not in valued:
            return None  # --help, --, -, an unknown option, -wVALUE, --json=1
        got = _take_value(argv, i)
        if got is None:
            return None
        value, i = got
        name, kind = valued[opt]
        converted = _converted(kind, value)
        if converted is None:
            return None
        if kind == "list":
            values.setdefault(name, [])
            values[name].append(value)  # type: ignore[attr-defined]
        else:
            values[name] = converted
    return values, positional


def parse_query_argv(argv: list[str]) -> LsArgs | ShowArgs | VersionArgs | None:
    """``argv`` (without the program name) as ``ledger ls``, ``ledger show`` or ``ledger
    --version`` read it, or ``None`` when it is not a plain form this parser takes on."""
    i, global_ledger, version = 0, None, False
    while i < len(argv) and argv[i].startswith("-"):  # the root's options
        arg = argv[i]
        if arg == "--version":
            version, i = True, i + 1
            continue
        if not (arg in ("-L", "--ledger") or arg.startswith("--ledger=")):
            return None
        got = _take_value(argv, i)
        if got is None:
            return None
        global_ledger, i = Path(got[0]), got[1]
    if version:
        # Eager, as the typer option is: printed whatever follows the root's options.
        return VersionArgs()
    if i >= len(argv) or argv[i] not in ("ls", "show"):
        return None
    command, rest = argv[i], argv[i + 1 :]
    if command == "ls":
        parsed = _parse_command(rest, _LS_VALUED, _LS_FLAGS)
        if parsed is None or parsed[1]:
            return None  # typer reports an extra argument
        ls = LsArgs(**parsed[0])  # type: ignore[arg-type]
        ls.ledger = ls.ledger or global_ledger
        return ls
    parsed = _parse_command(rest, _SHOW_VALUED, _SHOW_FLAGS)
    if parsed is None or len(parsed[1]) > 1:
        return None  # typer reports an extra argument
    show = ShowArgs(run=parsed[1][0] if parsed[1] else None, **parsed[0])  # type: ignore[arg-type]
    show.ledger = show.ledger or global_ledger
    return show


def run_query(args: LsArgs | ShowArgs | VersionArgs) -> int:
    """Run the parsed command; the caller (``entry._run_fast``) maps errors as ``app.main``."""
    if isinstance(args, VersionArgs):
        from .._version import __version__

        sys.stdout.write(f"ledger {__version__}\n")
    elif isinstance(args, LsArgs):
        run_ls(args)
    else:
        run_show(args)
    return 0


def run_ls(args: LsArgs) -> None:
    """List original runs, newest first: a table, or JSON with ``args.json_out``."""
    from .._units import one_line
    from ..index.checked import REINDEX_HINT
    from ..index.query import parse_columns, parse_where
    from ..index.search import Search
    from ..index.short_ids import short_ids_of
    from ..run.find import list_runs
    from ..store import Store
    from ._output import print_json, print_warnings, progress_stages
    from .record_cmd import parse_tags

    warnings: list[str] = []
    filters, chosen = parse_where(args.where), parse_columns(args.columns)
    search = Search(args.search) if args.search is not None else None
    store = Store.open(args.ledger)
    with progress_stages():  # the index, when it must be rebuilt, says so on a terminal
        rows = list_runs(
            store,
            name=args.name,
            status=args.status,
            tags=parse_tags(args.tags),
            contract=args.contract,
            limit=args.limit,
            replays=args.replays,
            warnings=warnings,
            where=filters,
            columns=chosen,
            search=search,
            retracted=args.retracted,
        )
    print_warnings(warnings, REINDEX_HINT)
    short = short_ids_of(store, [r["run_id"] for r in rows])
    for r in rows:
        r["short_id"] = short.get(r["run_id"], r["run_id"])
    if args.json_out:
        print_json(rows)
        return
    from .._columns import Column
    from ._printer import printer

    out = printer()
    if chosen is not None:
        out.table(
            ["id", *chosen],
            [
                [
                    f"↳ {r['short_id']}" if "original" in r else r["short_id"],
                    # Cells are literal text: names, tags and config values are user data.
                    *(one_line(_cell(r["columns"].get(c))) for c in chosen),
                ]
                for r in rows
            ],
            no_wrap=[0],
        )
        return
    # The id column is the short id every command accepts; it is never wrapped or cut. When
    # the width runs short, columns go from the right of PRIORITY's order: the id, name,
    # status and key metric stay longest, times and digests go first (``ledger._columns``).
    marks = [
        "replay" if r.get("original") or r["replay_of"] else str(r["replays"] or "") for r in rows
    ]
    show_marks = any(marks)  # the column only when some run was replayed
    key, values = _key_metric(store, rows)
    cols = [
        Column("id", 0, wrap=False),
        Column("name", 1),
        Column("status", 2, wrap=False),
        *([Column(key, 3, wrap=False)] if key else []),
        Column("exit", 6, wrap=False),
        Column("started", 8, wrap=False),
        Column("wall s", 7, wrap=False),
        Column("contract", 9, wrap=False),
        *([Column("replays", 5)] if show_marks else []),
        Column("tags", 4),
    ]
    table = []
    for r, mark in zip(rows, marks, strict=True):
        # The index holds what the records say: a record damaged or written by hand may give
        # a list where a name goes. Shown as JSON (``ledger verify`` names the record).
        wall, tags = r["wall_seconds"], r["tags"]
        cells = [
            f"↳ {r['short_id']}" if "original" in r else r["short_id"],  # a replay, under it
            _cell(r["name"]) + (" (retracted)" if r.get("retracted") else ""),
            _cell(r["status"]),
            *([values.get(r["run_id"], "")] if key else []),
            _cell(r["exit_code"]),
            _cell(r["started"])[:19],
            f"{wall:.1f}" if isinstance(wall, int | float) else _cell(wall),
            digest[3:15] if isinstance(digest := r["contract_digest"], str) else _cell(digest),
            *([mark] if show_marks else []),
            " ".join(f"{k}={_cell(v)}" for k, v in tags.items())
            if isinstance(tags, dict)
            else _cell(tags),
        ]
        table.append([one_line(cell) for cell in cells])
    out.table(cols, table)


def _key_metric(store: Store, rows: list[dict[str, Any]]) -> tuple[str | None, dict[str, str]]:
    """The main metric most of the listed runs logged (the first seen among equals) and each
    run's last value of it, read from the run records ``list_runs`` checked."""
    from collections import Counter

    from ..errors import LedgerError
    from ..index.tables import main_metrics

    last: dict[str, dict[str, Any]] = {}
    for r in rows:
        try:
            rec = store.get_json(r["oid"]) if r.get("oid") else {}
        except LedgerError:
            rec = {}
        last[r["run_id"]] = main_metrics(None, rec if isinstance(rec, dict) else {})
    counts = Counter(n for m in last.values() for n in m)
    if not counts:
        return None, {}
    key = counts.most_common(1)[0][0]
    shown = {}
    for rid, m in last.items():
        value = (m.get(key) or {}).get("last")
        shown[rid] = f"{value:.4g}" if isinstance(value, int | float) else ""
    return key, shown


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def run_show(args: ShowArgs) -> None:
    """Everything bound to a run: lines, or JSON with ``args.json_out``."""
    from ..index.checked import REINDEX_HINT
    from ..run.find import newest_run
    from ..run.show import describe_run, render_run
    from ..store import Store
    from ._output import print_json, print_warnings, progress_stages

    store = Store.open(args.ledger)
    with progress_stages():  # the index, when it must be rebuilt, says so on a terminal
        info = describe_run(store, args.run if args.run is not None else newest_run(store))
    print_warnings(info.get("warnings", []), REINDEX_HINT)
    if args.json_out:
        print_json(info)
    else:
        from ._printer import printer

        render_run(info, printer(), all_files=args.all_files)
