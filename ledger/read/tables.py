"""The rows behind ``Ledger.runs``, ``metrics`` and ``run``: the same code path as ``ledger ls``
and ``ledger show`` (``list_runs``, ``describe_run``), every value read from hashed records."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import UsageError
from ..store import Store

__all__ = [
    "METRIC_COLUMNS",
    "RUN_COLUMNS",
    "metric_rows",
    "metrics_frame",
    "run_rows",
    "runs_frame",
]

# The leading columns of each table, with their type in Parquet.
RUN_COLUMNS = {
    "id": "string",
    "short_id": "string",
    "name": "string",
    "status": "string",
    "exit_code": "int64",
    "started": "timestamp",
    "ended": "timestamp",
    "wall_seconds": "double",
    "replay_of": "string",
    "replays": "int64",
    "contract": "string",
    "tags": "string",  # JSON text in files; a dict in a DataFrame
    "retracted": "bool",
    "retraction_reason": "string",
    "verdict": "string",
    "verdicts": "string",
}
METRIC_COLUMNS = {
    "run": "string",
    "metric": "string",
    "step": "int64",
    "value": "double",
    "time": "double",
    "rank": "int64",
    "source": "string",
    "samples": "int64",
}
_METRIC_STATS = (".last", ".best")  # of each metric, in the runs table


def _verdicts(store: Store, run_ids: list[str], warnings: list[str]) -> dict[str, list[Any]]:
    """Each run's verdicts (as original or replay), oldest first, read back from records."""
    from ..index import Index
    from ..index.checked import checked_verdicts

    out: dict[str, list[Any]] = {}
    with Index(store) as index:
        index.sync()
        for run_id in run_ids:
            rows = index.query(
                "SELECT * FROM verdicts WHERE ref IN "
                "(SELECT ref FROM verdict_runs WHERE run_id = ?) ORDER BY created",
                (run_id,),
            )
            out[run_id] = checked_verdicts(store, run_id, rows, warnings) if rows else []
    return out


def run_rows(
    store: Store,
    *,
    where: list[str],
    name: str | None,
    tags: dict[str, str] | None,
    status: str | None,
    replays: bool,
    retracted: bool,
    limit: int | None,
    warnings: list[str],
) -> list[dict[str, Any]]:
    from ..index.query import parse_where
    from ..index.short_ids import short_ids_of
    from ..run.find import list_runs

    if limit is not None and limit < 1:
        raise UsageError(f"limit must be at least 1, got {limit}")
    listed = list_runs(
        store,
        name=name,
        status=status,
        tags=tags,
        limit=sys.maxsize if limit is None else limit,
        replays=replays,
        warnings=warnings,
        where=parse_where(where),
        retracted=retracted,
        with_values=True,
    )
    ids = [r["run_id"] for r in listed]
    short = short_ids_of(store, ids)
    verdicts = _verdicts(store, ids, warnings)
    out = []
    for r in listed:
        mine = verdicts.get(r["run_id"], [])
        retraction = r.get("retracted")
        row: dict[str, Any] = {
            "id": r["run_id"],
            "short_id": short.get(r["run_id"], r["run_id"]),
            "name": r["name"],
            "status": r["status"],
            "exit_code": r["exit_code"],
            "started": r["started"],
            "ended": r["ended"],
            "wall_seconds": r["wall_seconds"],
            "replay_of": r["replay_of"],
            "replays": r.get("replays", 0),
            "contract": r["contract_digest"],
            "tags": dict(r["tags"]),
            "retracted": retraction is not None,
            "retraction_reason": None if retraction is None else retraction.get("reason"),
            "verdict": mine[-1]["outcome"] if mine else None,
            "verdicts": [
                {k: v[k] for k in ("mode", "outcome", "original", "replays", "created")}
                for v in mine
            ],
        }
        for key, value in (r.get("values") or {}).items():
            if key.startswith("params.") or (
                key.startswith("metrics.") and key.endswith(_METRIC_STATS)
            ):
                row[key] = value
        out.append(row)
    return out


def runs_frame(pd: Any, rows: list[dict[str, Any]]) -> Any:
    extra = sorted({k for r in rows for k in r} - set(RUN_COLUMNS))
    params = [k for k in extra if k.startswith("params.")]
    metrics = [k for k in extra if k.startswith("metrics.")]
    frame = pd.DataFrame(rows, columns=[*RUN_COLUMNS, *params, *metrics])
    for col in ("started", "ended"):
        frame[col] = pd.to_datetime(frame[col], utc=True, format="ISO8601")
    for col in ("exit_code", "replays"):
        frame[col] = frame[col].astype("Int64")
    frame["wall_seconds"] = frame["wall_seconds"].astype("float64")
    frame["retracted"] = frame["retracted"].astype(bool)
    return frame


def _number(value: Any) -> float:
    """A stored value: a number, or "nan", "inf", "-inf" (canonical JSON has no NaN)."""
    return float(value)


def metric_rows(store: Store, run_ids: list[str], names: list[str] | None) -> list[dict[str, Any]]:
    from ..run.find import backed_record, run_model

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for run_id in run_ids:
        oid = backed_record(store, run_id)
        rec = store.get_json(oid)  # re-hashed on read
        run_model(rec, run_id, oid)  # its fields are read below as the run model has them
        for m in rec.get("metrics") or []:
            name = str(m.get("name"))
            seen.add(name)
            if names is not None and name not in names:
                continue
            series = store.get_json(m["series"])
            steps, walls = series.get("step") or [], series.get("wall") or []
            samples = series.get("samples") or []
            for i, value in enumerate(series.get("value") or []):
                wall = walls[i] if i < len(walls) else None
                out.append(
                    {
                        "run": run_id,
                        "metric": name,
                        "step": steps[i] if i < len(steps) else None,
                        "value": _number(value),
                        "time": None if wall is None else float(wall),
                        "rank": series.get("rank"),
                        "source": series.get("source"),
                        "samples": samples[i] if i < len(samples) else None,
                    }
                )
    missing = [n for n in names or [] if n not in seen]
    if missing and run_ids:
        raise UsageError(
            f"no metric {', '.join(map(repr, missing))} in the {len(run_ids)} run(s) asked for",
            hint="they record: " + (", ".join(sorted(seen)) or "no metrics"),
        )
    return out


def metrics_frame(pd: Any, rows: list[dict[str, Any]]) -> Any:
    frame = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    for col in ("step", "rank", "samples"):
        frame[col] = frame[col].astype("Int64")
    for col in ("value", "time"):
        frame[col] = frame[col].astype("float64")
    return frame
