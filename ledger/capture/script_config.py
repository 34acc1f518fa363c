"""Script globals in the merged config: what ``script_hook`` wrote, read back by the recorder.

``script_hook`` (in the recorded process) writes the plain module globals of ``__main__`` when
the process ends and at its first checkpoint save. Here, after the run: one capture per process
(the exit values, else the checkpoint's; a value that changed between the two is run state and
is left out), the ``--key=value`` arguments the program took, the part of them that joins
``resolved``, and, when nothing was found at all, the sentence that says why.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

__all__ = [
    "describe_sources",
    "empty_reason",
    "one_per_process",
    "script_overrides",
    "script_resolved",
]

LEFT_OUT_CHANGED = "changed after the first checkpoint save"
LEFT_OUT_PARSED = "the process was configured by a parser"


def _given(text: str) -> Any:
    """A command-line value as a configurator reads it: a Python literal, else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _same(given: Any, value: Any) -> bool:
    if isinstance(given, bool) or isinstance(value, bool):
        return given is value
    if isinstance(given, tuple):
        given = list(given)
    return bool(given == value)


def script_overrides(argv: Sequence[str], values: dict[str, Any]) -> dict[str, str]:
    """The ``--key=value`` and ``--key value`` arguments the program took: those naming a
    global (dashes read as underscores) that holds the value given when the process ended."""
    out: dict[str, str] = {}
    args = list(argv)
    for i, arg in enumerate(args):
        if not arg.startswith("--") or len(arg) < 3:
            continue
        name, eq, text = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                continue
            text = args[i + 1]
        for key in dict.fromkeys((name, name.replace("-", "_"))):
            if key in values and _same(_given(text), values[key]):
                out[key] = text
                break
    return out


def one_per_process(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Captures of the same process folded into one: the exit capture, else the checkpoint's;
    names whose value differs between the two are left out (run state, not config)."""
    by_pid: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        by_pid.setdefault(item["pid"], []).append(item)
    out = []
    for group in by_pid.values():
        exits = [c for c in group if c["when"] == "exit"]
        checkpoints = [c for c in group if c["when"] == "checkpoint"]
        chosen = dict((exits or checkpoints)[-1])
        values = dict(chosen["values"])
        left_out = dict(chosen["left_out"])
        if exits and checkpoints:
            first = checkpoints[0]["values"]
            for name in [k for k, v in values.items() if k in first and first[k] != v]:
                del values[name]
                left_out[name] = LEFT_OUT_CHANGED
        chosen.update(
            values=values,
            left_out=dict(sorted(left_out.items())),
            overrides=script_overrides(chosen["argv"], values),
        )
        out.append(chosen)
    out.sort(key=lambda c: (c["time"], c["pid"], c["seq"]))
    return out


def _without_mirrors(values: dict[str, Any]) -> dict[str, Any]:
    """Dict globals lose the items that repeat a top-level global (nanoGPT's ``config`` dict
    and ``model_args`` hold copies of the globals): one setting, one key in ``resolved``."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, dict):
            value = {
                k: v
                for k, v in value.items()
                if not (k in values and k != name and _same(values[k], v))
            }
            if not value:
                continue
        out[name] = value
    return out


def script_resolved(
    script: Sequence[dict[str, Any]], parsed_pids: set[int]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The captures kept in the record, and the values that join ``resolved``.

    A process that a parser configured (argparse, Hydra, absl, click, typer) keeps only its
    config objects (OmegaConf, dataclasses): its other globals are constants and state. Of the
    rest, ranks other than 0 are kept per process but not merged (``device = 'cuda:3'``), and
    processes merge in the order they ended."""
    kept: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    for cap in script:
        values = cap["values"]
        if cap["pid"] in parsed_pids:
            typed = cap["typed"]
            left_out = dict(cap["left_out"])
            left_out.update({k: LEFT_OUT_PARSED for k in values if k not in typed})
            values = {k: v for k, v in values.items() if k in typed}
            cap = {**cap, "values": values, "left_out": dict(sorted(left_out.items()))}
            cap["overrides"] = script_overrides(cap["argv"], values)
        if not values:
            continue
        kept.append(cap)
        if cap["rank"] in (None, 0):
            merged.update(_without_mirrors(values))
    return kept, merged


def empty_reason(
    *,
    parsed: bool,
    files: bool,
    argv: Sequence[str],
    script: Sequence[dict[str, Any]],
) -> str:
    """Why a run has no config: what was looked for, and what each source held."""
    parts = []
    if not parsed:
        parts.append("no argparse, Hydra, absl or click/typer parser ran")
    if not files:
        parts.append("no config file was named on the command line")
    flags = [a for a in argv[1:] if a.startswith("--") and len(a) > 2]
    if flags:
        parts.append(f"{len(flags)} --key arguments named no module global")
    else:
        parts.append("no --key=value arguments")
    ended = [c for c in script if c["when"] == "exit"]
    if script:
        left: dict[str, str] = {}
        for c in script:
            left.update(c["left_out"])
        what = "no plain module globals" if ended else "no plain module globals at its checkpoint"
        shown = ", ".join(f"{k} ({v})" for k, v in list(left.items())[:5])
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        parts.append(f"__main__ had {what}" + (f"; left out: {shown}{more}" if left else ""))
    else:
        parts.append(
            "no Python process ran to its end or to a checkpoint save with ledger's start-up "
            "hook (a program that is not Python, run with python -I or -S, or killed before)"
        )
    return "no config: " + "; ".join(parts)


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1] or path


def describe_sources(config: Any) -> list[str]:
    """One line per source of a config record (``ledger show``, the web view): where each
    value of ``resolved`` came from, and what a run with none looked at."""
    if not isinstance(config, dict):
        return []
    out = []
    for f in config.get("files") or []:
        out.append(f"config file {f.get('path')} ({f.get('format')})")
    script = config.get("script") or []
    others = sum(1 for s in script if s.get("rank") not in (None, 0))
    for s in script:
        if s.get("rank") not in (None, 0):
            continue  # kept per process, not merged: counted on rank 0's line
        at = "at exit" if s.get("when") == "exit" else "at the first checkpoint save"
        rank = "" if s.get("rank") is None else f", rank 0 of {others + 1} processes"
        line = f"script globals of {_name(str(s.get('script')))} ({at}{rank})"
        overrides = s.get("overrides") or {}
        if overrides:
            line += "; overrides " + " ".join(f"--{k}={v}" for k, v in overrides.items())
        out.append(line)
    for h in config.get("hydra") or []:
        out.append(
            "Hydra config"
            + (f"; overrides {' '.join(h['overrides'])}" if h.get("overrides") else "")
        )
    for p in config.get("parsers") or []:
        what = {"absl": "flags", "fire": "call", "jsonargparse": "parser"}.get(
            str(p.get("parser")), "command"
        )
        out.append(f"{p.get('parser')} {what} {p.get('name')}")
    for a in config.get("argparse") or []:
        out.append(f"argparse {a.get('prog')}")
    return list(dict.fromkeys(out))  # one line for the same parser in every rank
