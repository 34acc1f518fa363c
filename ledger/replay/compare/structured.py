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


def _child(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if _IDENT.fullmatch(text):
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text)}]"


def walk(tally: ValueTally, original: Any, replay: Any, path: str = "", leaf: str = "") -> None:
    """Compare two parsed documents into ``tally``, in the original's order."""
    if isinstance(original, dict) and isinstance(replay, dict):
        for key, value in original.items():
            if key in replay:
                walk(tally, value, replay[key], _child(path, key), str(key))
            else:
                tally.structural(_child(path, key), "original")
        for key in replay:
            if key not in original:
                tally.structural(_child(path, key), "replay")
        return
    if isinstance(original, list | tuple) and isinstance(replay, list | tuple):
        for i, (x, y) in enumerate(zip(original, replay, strict=False)):
            walk(tally, x, y, _child(path, i), leaf)
        longer, side = (original, "original") if len(original) > len(replay) else (replay, "replay")
        for i in range(min(len(original), len(replay)), len(longer)):
            tally.structural(_child(path, i), side)
        return
    where = path or "(root)"
    names = [where, leaf] if leaf else [where]
    tally.value(where, original, replay, names)


def compare_structured_files(
    original: Path, replay: Path, settings: CompareSettings
) -> FileComparison:
    tally = ValueTally(settings, unit="values")
    walk(tally, load_structured(original), load_structured(replay))
    return tally.result(original.name, "structured")
