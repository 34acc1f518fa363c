"""JSON, JSON Lines and YAML, compared as data: numbers numerically, everything else exactly.

Key order and formatting do not matter; a key or list item present in only one file is a
structural difference. YAML is read with the safe loader only, and every format
with ``ledger._parse``'s caps (an alias bomb or a deeply nested output is not comparable).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..._parse import MAX_RECORD_DEPTH, load_json, load_yaml_documents
from ...records.verdict_parts import CompareSettings, FileComparison
from ._common import NotComparable, ValueTally

__all__ = ["SUFFIXES", "compare_structured_files", "is_structured_file", "load_structured"]

SUFFIXES = (".json", ".jsonl", ".ndjson", ".yaml", ".yml")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def is_structured_file(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)


def _json(text: str) -> Any:
    return load_json(text, max_depth=MAX_RECORD_DEPTH)


def _json_lines(text: str) -> Any:
    return [
        load_json(line, max_depth=MAX_RECORD_DEPTH) for line in text.splitlines() if line.strip()
    ]


def _yaml(text: str) -> Any:
    docs = load_yaml_documents(text, max_depth=MAX_RECORD_DEPTH)  # no Python objects, capped
    return docs[0] if len(docs) == 1 else docs


def _parser(path: Path) -> tuple[str, Callable[[str], Any]]:
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "YAML", _yaml
    if suffix in (".jsonl", ".ndjson"):
        return "JSON Lines", _json_lines
    return "JSON", _json


def load_structured(path: Path) -> Any:
    """Parse a JSON, JSON Lines or YAML file into plain Python data."""
    what, parse = _parser(path)
    try:
        return parse(path.read_text(encoding="utf-8"))
    except Exception as e:  # json, yaml and decoding errors all mean: not this format
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise NotComparable(f"cannot parse {path.name} as {what}: {first}") from None


_KEY_SHOWN = 40  # a longer key is shortened where a person reads it
_OPENERS = {"{": "}", "(": ")", "[": "]"}


def _child(path: str, key: Any, *, shown: bool = False) -> str:
    """``path.key``, ``path[3]`` or ``path["a key"]``; ``shown``: a key that holds a repr (a
    Lightning callback's ``ModelCheckpoint{'monitor': None, ...}``) or a long text is
    shortened (``ModelCheckpoint{…}``), for the line a person reads."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if _IDENT.fullmatch(text):
        return f"{path}.{text}" if path else text
    if shown:
        text = _short_key(text)
    return f"{path}[{json.dumps(text, ensure_ascii=not shown)}]"


def _short_key(text: str) -> str:
    cut = min((i for i, c in enumerate(text) if c in _OPENERS), default=-1)
    if cut > 0:
        return text[: cut + 1] + "…" + _OPENERS[text[cut]]
    return text if len(text) <= _KEY_SHOWN else text[: _KEY_SHOWN - 1] + "…"


def walk(
    tally: ValueTally,
    original: Any,
    replay: Any,
    path: str = "",
    leaf: str = "",
    shown: str | None = None,
) -> None:
    """Compare two parsed documents into ``tally``, in the original's order. ``path`` names
    a value (tolerance overrides match it); ``shown`` is the same path for a person to read."""
    shown = path if shown is None else shown
    if isinstance(original, dict) and isinstance(replay, dict):
        for key, value in original.items():
            here = _child(shown, key, shown=True)
            if key in replay:
                walk(tally, value, replay[key], _child(path, key), str(key), here)
            else:
                tally.structural(_child(path, key), "original", where=here)
        for key in replay:
            if key not in original:
                tally.structural(_child(path, key), "replay", where=_child(shown, key, shown=True))
        return
    if isinstance(original, list | tuple) and isinstance(replay, list | tuple):
        for i, (x, y) in enumerate(zip(original, replay, strict=False)):
            walk(tally, x, y, _child(path, i), leaf, _child(shown, i))
        longer, side = (original, "original") if len(original) > len(replay) else (replay, "replay")
        for i in range(min(len(original), len(replay)), len(longer)):
            tally.structural(_child(path, i), side, where=_child(shown, i))
        return
    where = path or "(root)"
    if leaf and tally.skip(leaf, shown):
        return
    names = [where, leaf] if leaf else [where]
    tally.value(where, original, replay, names, where=shown or "(root)")


def compare_structured_files(
    original: Path, replay: Path, settings: CompareSettings
) -> FileComparison:
    tally = ValueTally(settings, unit="values")
    walk(tally, load_structured(original), load_structured(replay))
    return tally.result(original.name, "structured")
