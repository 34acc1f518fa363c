"""Tables as files: CSV, JSON Lines and Parquet, from the rows of ``Ledger.run_rows`` and
``metric_rows``. CSV and JSON Lines need nothing beyond Python; Parquet needs pyarrow (the
``table`` extra). Nested values (tags, verdicts, list params) are JSON text in CSV and
Parquet; non-finite numbers are ``nan``, ``inf``, ``-inf`` as in the ledger's own records."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from ..errors import UsageError

__all__ = ["FORMATS", "render_table"]

FORMATS = ("csv", "jsonl", "parquet")


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def _flat(value: Any) -> Any:
    """A cell of CSV or Parquet: scalars as they are, anything nested as JSON text."""
    if isinstance(value, dict | list | tuple):
        return json.dumps(_json_value(value), sort_keys=True, ensure_ascii=False)
    return value


def _columns(rows: list[dict[str, Any]], first: tuple[str, ...]) -> list[str]:
    seen = dict.fromkeys(first)
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def render_table(
    rows: list[dict[str, Any]], fmt: str, columns: dict[str, str] | None = None
) -> bytes:
    """``rows`` in format ``fmt``. ``columns`` (name -> ``string``, ``int64``, ``double``,
    ``bool`` or ``timestamp``) come first, are there when no row is, and have that type in
    Parquet; the type of every other column is read off its values."""
    columns = columns or {}
    cols = _columns(rows, tuple(columns))
    if fmt == "jsonl":
        return b"".join(
            json.dumps({c: _json_value(r.get(c)) for c in cols}, ensure_ascii=False).encode()
            + b"\n"
            for r in rows
        )
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in rows:
            writer.writerow(["" if r.get(c) is None else _flat(r.get(c)) for c in cols])
        return buf.getvalue().encode()
    if fmt == "parquet":
        from .frames import require_pyarrow

        pa = require_pyarrow()
        import pyarrow.parquet as pq

        arrays = {}
        for c in cols:
            values = [_flat(r.get(c)) for r in rows]
            kinds = {type(v) for v in values if v is not None}
            if c in columns:
                arrays[c] = _typed(pa, values, columns[c])
            elif kinds == {int, float}:
                arrays[c] = pa.array([None if v is None else float(v) for v in values])
            elif len(kinds) > 1:  # mixed values of a param: as text, never a guessed type
                arrays[c] = pa.array([None if v is None else _text(v) for v in values])
            else:
                arrays[c] = pa.array(values)
        table = pa.table(arrays)
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()
    raise UsageError(f"unknown format {fmt!r}", hint="one of " + ", ".join(FORMATS))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(_json_value(value))


def _typed(pa: Any, values: list[Any], kind: str) -> Any:
    if kind == "timestamp":
        from datetime import datetime

        stamps = [None if v is None else datetime.fromisoformat(str(v)) for v in values]
        return pa.array(stamps, type=pa.timestamp("us", tz="UTC"))
    if kind == "double":
        values = [None if v is None else float(v) for v in values]
    elif kind == "string":
        values = [None if v is None else _text(v) for v in values]
    types = {"string": pa.string, "int64": pa.int64, "double": pa.float64, "bool": pa.bool_}
    return pa.array(values, type=types[kind]())
