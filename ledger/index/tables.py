"""The query tables of the index: ``params``, ``metrics``, ``checkpoints``, ``tags`` and views.

Each is a function of one run record (and the objects it links: its resolved config, its metric
series), so folding the log gives them like every other table and ``ledger verify`` compares
them with a fresh fold. ``run_values`` is the same extraction as a flat dict: what ``ls
--where/--columns`` and the web view check index answers against.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from typing import Any

from ..errors import LedgerError
from . import rows as run_index  # noqa: F401  (registered first: our indexes are on its runs table)
from ._indexers import Indexer, JsonReader, Row, register_indexer
from ._sqlite import Database

__all__ = [
    "METRIC_STATS",
    "best_of",
    "flatten_params",
    "main_metrics",
    "run_values",
]

# What ``metrics.<name>.<stat>`` may name, and the column holding it.
METRIC_STATS = ("first", "last", "min", "max", "count", "best", "last_step")
# Names that go down when things improve; every other metric's best is its max.
_LOWER_IS_BETTER = ("loss", "err", "perplexity", "ppl", "mse", "mae", "rmse", "nll", "wer", "cer")
_SOURCE_ORDER = {"combined": 0, "api": 1, "tensorboard": 2, "stdout": 3}


def _tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS params (run_id TEXT NOT NULL, key TEXT NOT NULL, "
        "value TEXT, num REAL, type TEXT, PRIMARY KEY (run_id, key))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL, name TEXT NOT NULL, "
        "source TEXT NOT NULL, rank INTEGER NOT NULL, main INTEGER, count INTEGER, first REAL, "
        "last REAL, min REAL, max REAL, best REAL, last_step INTEGER, nonfinite INTEGER, "
        "series TEXT, PRIMARY KEY (run_id, name, source, rank))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "event TEXT, step INTEGER, digest TEXT, owner TEXT, rank INTEGER, bytes_total INTEGER, "
        "bytes_new INTEGER, time TEXT, PRIMARY KEY (run_id, seq))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS tags (run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
        "PRIMARY KEY (run_id, key))"
    )
    for name, sql in _VIEWS.items():
        db.execute(f"CREATE VIEW IF NOT EXISTS {name} AS {sql}")
    for sql in _INDEXES:
        db.execute(sql)


_VIEWS = {
    # Original runs only, with how many replays each has (one level) and the newest verdict.
    "originals": (
        "SELECT r.*, (SELECT count(*) FROM runs x WHERE x.replay_of = r.run_id) AS replays, "
        "(SELECT v.outcome FROM verdicts v WHERE v.original = r.run_id ORDER BY v.created DESC "
        "LIMIT 1) AS verdict FROM runs r WHERE r.replay_of IS NULL"
    ),
    # Each run's main series per metric name, beside the run's name and status.
    "run_metrics": (
        "SELECT r.run_id, r.name AS run_name, r.status, m.name AS metric, m.count, m.first, "
        "m.last, m.min, m.max, m.best FROM runs r JOIN metrics m ON m.run_id = r.run_id "
        "WHERE m.main = 1"
    ),
    "run_params": (
        "SELECT r.run_id, r.name AS run_name, r.status, p.key, p.value, p.num "
        "FROM runs r JOIN params p ON p.run_id = r.run_id"
    ),
    # Each replay beside its original and the verdict that compared them.
    "replay_verdicts": (
        "SELECT o.run_id AS original, o.name, x.run_id AS replay, x.status AS replay_status, "
        "v.mode, v.outcome, v.summary FROM runs x JOIN runs o ON o.run_id = x.replay_of "
        "LEFT JOIN verdicts v ON v.original = o.run_id AND v.replay = x.run_id"
    ),
}
_INDEXES = [
    "CREATE INDEX IF NOT EXISTS params_key ON params (key, num)",
    "CREATE INDEX IF NOT EXISTS metrics_name ON metrics (name, main)",
    "CREATE INDEX IF NOT EXISTS tags_key ON tags (key, value)",
    "CREATE INDEX IF NOT EXISTS runs_replay_of ON runs (replay_of)",
    "CREATE INDEX IF NOT EXISTS runs_run_id ON runs (run_id)",
]


def flatten_params(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"opt": {"lr": 0.1}}`` -> ``{"opt.lr": 0.1}``; lists stay whole values."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten_params(v, key))
            else:
                out[key] = v
    elif prefix:
        out[prefix] = value
    return out


# ``json.dumps(value, sort_keys=True)`` builds an encoder per call; this one is built once.
_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode


def _param_cells(value: Any) -> tuple[str, float | None, str]:
    """(value as text, the number or None, type)."""
    kind = type(value)
    # The common cells first, as json.dumps writes them (``float.__repr__``, ``int.__repr__``).
    if kind is str:
        return value, None, "str"
    if kind is float and math.isfinite(value):
        return float.__repr__(value), value, "float"
    if kind is int:
        return int.__repr__(value), float(value), "int"
    if isinstance(value, bool):
        return json.dumps(value), None, "bool"
    if isinstance(value, int | float):
        num = float(value)
        return json.dumps(value), (num if math.isfinite(num) else None), type(value).__name__
    if isinstance(value, str):
        return value, None, "str"
    if value is None:
        return "null", None, "null"
    return _SORTED_JSON(value), None, type(value).__name__


def best_of(name: str, lo: float | None, hi: float | None) -> float | None:
    return lo if _lower_is_better(name) else hi


@functools.lru_cache(maxsize=1024)
def _lower_is_better(name: str) -> bool:
    lowered = name.lower()
    return any(w in lowered for w in _LOWER_IS_BETTER)


def _get(store: JsonReader | None, oid: Any) -> Any:
    """The JSON object ``oid`` names; None where there is none (missing, collected, corrupt:
    ``ledger verify`` says which)."""
    if store is None or not isinstance(oid, str):
        return None
    try:
        return store.get_json(oid)
    except LedgerError:
        return None


# A record damaged or written by hand may hold anything where a field goes (a list for the
# tags); the index takes what fits and ``ledger verify`` names the record (malformed-record).
def _dict_of(rec: dict[str, Any], key: str) -> dict[str, Any]:
    value = rec.get(key)
    return value if isinstance(value, dict) else {}


def _list_of(rec: dict[str, Any], key: str) -> list[Any]:
    value = rec.get(key)
    return value if isinstance(value, list) else []


def params_of(store: JsonReader | None, rec: dict[str, Any]) -> dict[str, Any]:
    config = _get(store, rec.get("resolved_config"))
    resolved = config.get("resolved") if isinstance(config, dict) else None
    return flatten_params(resolved) if isinstance(resolved, dict) else {}


def _first(store: JsonReader | None, oid: Any) -> float | None:
    series = _get(store, oid)
    if not isinstance(series, dict):
        return None
    values = series.get("value")
    if isinstance(values, list) and values and isinstance(values[0], int | float):
        v = float(values[0])
        return v if math.isfinite(v) else None
    return None


def _metric_rows(store: JsonReader | None, rec: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for m in _list_of(rec, "metrics"):
        # The table's key (name, source, rank): a summary without them is no series to list.
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            continue
        if not isinstance(m.get("source"), str) or not isinstance(m.get("rank"), int | None):
            continue
        get = m.get
        name, last, rank, lo, hi, series = (
            get("name"),
            get("last"),
            get("rank"),
            get("min"),
            get("max"),
            get("series"),
        )
        rows.append(
            {
                "name": name,
                "source": get("source"),
                "rank": -1 if rank is None else rank,
                "count": get("count"),
                "first": _first(store, series),
                "last": last if isinstance(last, int | float) else None,
                "min": lo,
                "max": hi,
                "best": best_of(str(name), lo, hi),
                "last_step": get("last_step"),
                "nonfinite": get("nonfinite_count"),
                "series": series,
            }
        )
    if len(rows) == 1:  # the main series of its name, without the sort below
        rows[0]["main"] = 1
        return rows
    # The main series of a name: the whole run's (rank -1) before one rank's, combined or
    # API-logged before scraped.
    main: dict[str, dict[str, Any]] = {}
    for row in sorted(
        rows,
        key=lambda r: (
            r["rank"] != -1,
            r["rank"],
            _SOURCE_ORDER.get(str(r["source"]), 9),
        ),
    ):
        main.setdefault(str(row["name"]), row)
    for row in rows:
        row["main"] = 1 if main.get(str(row["name"])) is row else 0
    return rows


def main_metrics(store: JsonReader | None, rec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each metric name's main series summary (with ``first`` and ``best``)."""
    return {str(r["name"]): r for r in _metric_rows(store, rec) if r["main"]}


def run_values(store: JsonReader | None, rec: dict[str, Any]) -> dict[str, Any]:
    """Everything ``--where`` and ``--columns`` may name, read from one run record:
    ``name``, ``status``..., ``params.<key>``, ``metrics.<name>.<stat>``, ``tags.<key>``,
    ``job.<field>``."""
    out: dict[str, Any] = {
        k: rec.get(k)
        for k in ("run_id", "name", "status", "exit_code", "started", "ended", "wall_seconds")
    }
    out["contract"] = rec.get("contract_digest")
    out["replay_of"] = rec.get("replay_of")
    for k, v in params_of(store, rec).items():
        out[f"params.{k}"] = v
    for name, row in main_metrics(store, rec).items():
        for stat in METRIC_STATS:
            out[f"metrics.{name}.{stat}"] = row[stat]
    for k, v in _dict_of(rec, "tags").items():
        out[f"tags.{k}"] = v
    job = rec.get("job")  # the Slurm job / torchrun rendezvous (ledger/capture/scheduler.py)
    if isinstance(job, dict):
        out.update(flatten_params(job, "job"))
    return out


def _run_id(ref: str) -> str | None:
    return ref.split("/", 1)[1] if ref.startswith("runs/") else None


def _rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    run_id = _run_id(ref)
    if run_id is None:
        return
    for key, value in params_of(store, rec).items():
        text, num, kind = _param_cells(value)
        yield "params", (run_id, key, text, num, kind)
    for m in _metric_rows(store, rec):
        yield (
            "metrics",
            (
                run_id,
                m["name"],
                m["source"],
                m["rank"],
                m["main"],
                m["count"],
                m["first"],
                m["last"],
                m["min"],
                m["max"],
                m["best"],
                m["last_step"],
                m["nonfinite"],
                m["series"],
            ),
        )
    for seq, ev in enumerate(_list_of(rec, "checkpoints")):
        if not isinstance(ev, dict):
            continue
        yield (
            "checkpoints",
            (
                run_id,
                seq,
                ev.get("event"),
                ev.get("step"),
                ev.get("checkpoint_digest"),
                ev.get("run_id"),
                ev.get("rank"),
                ev.get("bytes_total"),
                ev.get("bytes_new"),
                ev.get("time"),
            ),
        )
    for k, v in _dict_of(rec, "tags").items():
        yield "tags", (run_id, str(k), str(v))


def _remove(db: Database, ref: str) -> None:
    run_id = _run_id(ref)
    if run_id is None:
        return
    for table in ("params", "metrics", "checkpoints", "tags"):
        db.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))


RUN_TABLES_INDEXER = Indexer(
    kind="run", tables=_tables, rows=_rows, remove=_remove, name="run-tables"
)
register_indexer(RUN_TABLES_INDEXER)
