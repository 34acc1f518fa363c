"""CSV and TSV, compared cell by cell: numbers numerically, text exactly.

A first row of text over a numeric body is taken as a header, so a difference is reported by
column name ("row 4, column 'loss'") and overrides can name columns. Rows are matched by position:
a table of metrics keyed by step belongs in a metric series, not here.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from ...records.verdict_parts import CompareSettings, FileComparison
from ._common import NotComparable, ValueTally

__all__ = ["SUFFIXES", "compare_table_files", "is_table_file", "parse_cell", "read_table"]

SUFFIXES = (".csv", ".tsv")
_INT = re.compile(r"[+-]?\d+")

Cell = int | float | str


def is_table_file(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)


def parse_cell(text: str) -> Cell:
    """An int, a float (nan and inf included) or the text itself."""
    s = text.strip()
    if _INT.fullmatch(s):
        return int(s)
    try:
        return float(s)
    except ValueError:
        return text


def read_table(path: Path) -> list[list[str]]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.reader(f, delimiter=delimiter))
    except (UnicodeDecodeError, csv.Error) as e:
        raise NotComparable(f"cannot read {path.name} as a table: {e}") from None


def _header(rows: list[list[str]]) -> list[str] | None:
    if len(rows) < 2 or not rows[0]:
        return None
    if all(isinstance(parse_cell(c), str) and c.strip() for c in rows[0]):
        return rows[0]
    return None


def compare_table_files(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    a, b = read_table(original), read_table(replay)
    header = _header(a)
    tally = ValueTally(settings, unit="cells")
    for r, (row_a, row_b) in enumerate(zip(a, b, strict=False)):
        line = r + 1
        for c in range(max(len(row_a), len(row_b))):
            column = header[c] if header and c < len(header) else str(c + 1)
            where = f"row {line}, column {column!r}"
            if c >= len(row_a) or c >= len(row_b):
                tally.structural(where, "original" if c < len(row_a) else "replay", line=line)
                continue
            x, y = row_a[c], row_b[c]
            names = [column, f"{column}[{line}]"]
            if header and r == 0:  # header cells are names: exact text
                tally.value(column, x, y, names, where=where, line=line)
            elif header and tally.skip(column, f"column {column!r}"):
                continue  # a timing column (time, samples_per_sec): beside the verdict
            else:
                tally.value(column, parse_cell(x), parse_cell(y), names, where=where, line=line)
    longer, side = (a, "original") if len(a) > len(b) else (b, "replay")
    for r in range(min(len(a), len(b)), len(longer)):
        tally.structural("", side, line=r + 1)
    if header:
        tally.notes.append(f"header: {', '.join(header)}")
    return tally.result(original.name, "table")
