"""What each page shows, gathered from hashed records (the index only picks which runs).

Every function here reads through the object store, which re-hashes what it returns; rows
come from ``list_runs`` and ``describe_run``, which check the index against the records and
collect a warning for each disagreement.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..errors import LedgerError
from ..index.tables import flatten_params, main_metrics, run_values
from ..store import Store
from .svg import PALETTE, Band, Line

__all__ = [
    "AXES",
    "SAFE_ID",
    "curves",
    "diff_page",
    "group_key",
    "run_page",
    "run_record",
    "runs_table",
]

AXES = {"step": "step", "samples": "samples seen", "wall": "wall time (s since start)"}
# Run ids become file names in a static site; anything else is not linked.
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
LOG_TAIL_LINES = 200


def run_record(store: Store, run_id: str, warnings: list[str] | None = None) -> dict[str, Any]:
    """A run's record, read through the ref the log backs (``ledger.run.find.backed_record``);
    {} when the run's ref file is not backed, with the reason added to ``warnings``."""
    from ..run.find import backed_record

    try:
        oid = backed_record(store, run_id)
    except LedgerError as e:
        if warnings is not None:
            warnings.append(f"run {run_id} is left out: {e.message}; run `ledger verify`")
        return {}
    return _record(store, oid)


def _record(store: Store, oid: Any) -> dict[str, Any]:
    if not isinstance(oid, str):
        return {}
    try:
        value = store.get_json(oid)
    except LedgerError:
        return {}
    return value if isinstance(value, dict) else {}


def _verdicts(store: Store, run_ids: Sequence[str], warnings: list[str]) -> dict[str, Any]:
    """The newest verdict about each original, read back from its record."""
    from ..index import Index
    from ..index.checked import checked_verdicts

    out: dict[str, Any] = {}
    if not run_ids:
        return out
    with Index(store) as index:
        marks = ",".join("?" * len(run_ids))
        rows = index.query(
            f"SELECT * FROM verdicts WHERE original IN ({marks}) ORDER BY created", tuple(run_ids)
        )
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_run.setdefault(str(row["original"]), []).append(row)
    for run_id, mine in by_run.items():
        checked = checked_verdicts(store, run_id, mine, warnings)
        if checked:
            out[run_id] = checked[-1]
    return out


def runs_table(
    store: Store,
    *,
    where: Sequence[Any] = (),
    search: Any = None,
    name: str | None = None,
    status: str | None = None,
    tags: dict[str, str] | None = None,
    page: int = 1,
    per_page: int = 50,
    only: Sequence[str] | None = None,
    retracted: bool = False,
) -> dict[str, Any]:
    """One page of original runs with their main metrics, the config keys that vary, tags and
    the newest replay verdict. ``only``: exactly these run ids (a static report). Names and
    tags are as curated (``ledger tag``, ``rename``), the recorded name beside; retracted runs
    are left out unless ``retracted`` (or named in ``only``), and marked with their reason."""
    from ..index.short_ids import short_ids_of
    from ..run.find import list_runs

    warnings: list[str] = []
    if only is not None:
        rows = _only_rows(store, only, warnings)
        has_next = False
    else:
        rows = list_runs(
            store,
            name=name,
            status=status,
            tags=tags,
            limit=page * per_page + 1,
            where=where,
            search=search,
            warnings=warnings,
            retracted=retracted,
        )
        has_next = len(rows) > page * per_page
        rows = rows[(page - 1) * per_page : page * per_page]
    short = short_ids_of(store, [r["run_id"] for r in rows])
    values: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        rec = _record(store, r["oid"])
        values[r["run_id"]] = run_values(store, rec)
        metrics[r["run_id"]] = main_metrics(store, rec)
    names = Counter(n for m in metrics.values() for n in m)
    metric_cols = [n for n, _ in names.most_common(4)]
    keys: dict[str, set[str]] = {}
    for v in values.values():
        for k, val in v.items():
            if k.startswith("params."):
                keys.setdefault(k, set()).add(repr(val))
    varying = [k for k, seen in keys.items() if len(seen) > 1 or len(values) == 1]
    param_cols = sorted(varying or keys)[:5]
    verdicts = _verdicts(store, [r["run_id"] for r in rows], warnings)
    table = []
    for r in rows:
        rid = r["run_id"]
        table.append(
            {
                "run_id": rid,
                "linked": bool(SAFE_ID.match(rid)),
                "short_id": short.get(rid, rid),
                "name": r.get("name") or "",
                "recorded_name": r.get("recorded_name") or "",
                "retracted": r.get("retracted"),
                "status": r.get("status"),
                "started": (r.get("started") or "")[:19].replace("T", " "),
                "wall_seconds": r.get("wall_seconds"),
                "tags": r.get("tags") or {},
                "replays": r.get("replays", 0),
                "metrics": {n: metrics[rid].get(n) for n in metric_cols},
                "params": {k: values[rid].get(k) for k in param_cols},
                "verdict": verdicts.get(rid),
            }
        )

    # The column picker: every optional column, whether it starts hidden (empty on this page,
    # or a metric's best, which the compare page shows) and why.
    def empty(values: list[Any]) -> bool:
        return all(v in (None, "", {}) for v in values)

    optional = [("duration", "duration", [r["wall_seconds"] for r in table])]
    for m in metric_cols:
        optional.append(
            (f"m-last-{m}", f"{m} last", [(r["metrics"][m] or {}).get("last") for r in table])
        )
        optional.append(
            (f"m-best-{m}", f"{m} best", [(r["metrics"][m] or {}).get("best") for r in table])
        )
    for k in param_cols:
        optional.append((f"p-{k}", k.removeprefix("params."), [r["params"][k] for r in table]))
    optional.append(("tags", "tags", [r["tags"] for r in table]))
    optional.append(
        ("verdict", "replay verdict", [r["verdict"] or r["replays"] or None for r in table])
    )
    columns = [
        {
            "key": key,
            "label": label,
            "empty": empty(values),
            "hidden": empty(values) or key.startswith("m-best-"),
        }
        for key, label, values in optional
    ]
    return {
        "rows": table,
        "columns": columns,
        "hidden_cols": {c["key"] for c in columns if c["hidden"]},
        "tag_keys": sorted({k for r in table for k in r["tags"]}),
        "metric_cols": metric_cols,
        "param_cols": [k.removeprefix("params.") for k in param_cols],
        "param_keys": param_cols,
        "page": page,
        "has_next": has_next,
        "warnings": list(dict.fromkeys(warnings)),
    }


def _only_rows(store: Store, run_ids: Sequence[str], warnings: list[str]) -> list[dict[str, Any]]:
    import json

    from ..index.checked import checked_runs
    from ..run.curate import read_curation
    from ..run.find import apply_curation, run_ref

    rows = [{"ref": run_ref(r), "run_id": r} for r in run_ids]
    # Rows built from the records themselves: no index row to disagree with.
    out = []
    for row in checked_runs(store, rows, [], every_run=False):
        row["tags"] = json.loads(row["tags"] or "{}")
        out.append(apply_curation(row, read_curation(store, row["run_id"])[1]))
    order = {r: i for i, r in enumerate(run_ids)}
    return sorted(out, key=lambda r: order.get(r["run_id"], 0))


def _series_points(store: Store, oid: Any, x: str) -> list[tuple[float, float]]:
    series = _record(store, oid)
    values = series.get("value") or []
    xs = series.get(x) or []
    steps = series.get("step") or []
    out: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        xv = xs[i] if i < len(xs) else None
        if x == "step" and xv is None:
            xv = steps[i] if i < len(steps) and steps[i] is not None else i
        if xv is None or not isinstance(v, int | float) or not math.isfinite(v):
            continue
        out.append((float(xv), float(v)))
    return out


def _label(rec: dict[str, Any]) -> str:
    rid = str(rec.get("run_id", ""))
    name = rec.get("name")
    return f"{name} ({rid[-8:]})" if name else rid


def group_key(rec: dict[str, Any], by: str) -> str | None:
    """The group a run falls in: its name (``by="name"``) or the value of one of its tags
    (``by="tag:KEY"``); None when it has no such tag."""
    if by.startswith("tag:"):
        value = (rec.get("tags") or {}).get(by[4:])
        return None if value is None else f"{by[4:]}={value}"
    return str(rec.get("name") or rec.get("run_id") or "")


def curves(
    store: Store,
    run_ids: Sequence[str],
    *,
    x: str = "step",
    group: bool = False,
    group_by: str | None = None,
    dashed: Sequence[str] = (),
    labels: dict[str, str] | None = None,
    colours: dict[str, str] | None = None,
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One chart per metric name over ``run_ids``: a line per run (named by ``labels``, drawn in
    ``colours`` when given), or with ``group_by`` (``name``, ``tag:KEY``; ``group``: by name)
    each set of two or more runs in one group drawn as its mean and a mean ± std band. A run
    whose ref file the log does not back is not drawn (``warnings`` says why)."""
    from .svg import line_chart

    if x not in AXES:
        x = "step"
    if group and group_by is None:
        group_by = "name"
    recs = {rid: run_record(store, rid, warnings) for rid in run_ids}
    if labels is None:
        from ..index.short_ids import short_ids_of
        from .labels import run_label

        short = short_ids_of(store, list(recs))
        labels = {
            rid: run_label(rec, short.get(rid, rid), "replay" if rec.get("replay_of") else "")
            for rid, rec in recs.items()
        }
    by_metric: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    for rid, rec in recs.items():
        for name, row in main_metrics(store, rec).items():
            by_metric.setdefault(name, []).append((rid, _series_points(store, row["series"], x)))
    groups: dict[str, list[str]] = {}
    if group_by:
        for rid, rec in recs.items():
            key = group_key(rec, group_by)
            if key is not None:
                groups.setdefault(key, []).append(rid)
    charts = []
    for metric in sorted(by_metric):
        lines: list[Line] = []
        bands: list[Band] = []
        seen_groups: set[str] = set()
        for i, (rid, points) in enumerate(by_metric[metric]):
            gname = group_key(recs[rid], group_by) if group_by else None
            if gname is not None and len(groups.get(gname, [])) > 1:
                if gname in seen_groups:
                    continue
                seen_groups.add(gname)
                members = [(r, p) for r, p in by_metric[metric] if r in groups[gname]]
                # Colours after the lines' own, so a band never looks like a run.
                colour = PALETTE[(len(by_metric[metric]) + len(bands)) % len(PALETTE)]
                bands.append(_band(gname, members, colour))
                continue
            lines.append(
                Line(
                    (labels or {}).get(rid) or _label(recs[rid]),
                    points,
                    (colours or {}).get(rid) or PALETTE[i % len(PALETTE)],
                    dashed=rid in dashed,
                    run_id=rid,
                )
            )
        charts.append(
            {
                "metric": metric,
                "svg": line_chart(lines, x_label=AXES[x], bands=bands, title=metric),
                "legend": [(ln.label, ln.colour, ln.dashed, ln.run_id) for ln in lines]
                + [
                    (f"{b.label}: mean ± std of {len(b.runs)} runs", b.colour, False, "")
                    for b in bands
                ],
            }
        )
    return charts


def _band(name: str, members: list[tuple[str, list[tuple[float, float]]]], colour: str) -> Band:
    """The group's mean at each x and a band of one standard deviation (n - 1) either side;
    at an x only one run reached, the band is that run's value."""
    at: dict[float, list[float]] = {}
    for _, points in members:
        for xv, yv in points:
            at.setdefault(xv, []).append(yv)
    xs = sorted(at)
    mean = [sum(at[v]) / len(at[v]) for v in xs]
    std = [
        math.sqrt(sum((y - m) ** 2 for y in at[v]) / (len(at[v]) - 1)) if len(at[v]) > 1 else 0.0
        for v, m in zip(xs, mean, strict=True)
    ]
    return Band(
        label=name,
        xs=xs,
        lo=[m - s for m, s in zip(mean, std, strict=True)],
        hi=[m + s for m, s in zip(mean, std, strict=True)],
        mean=mean,
        colour=colour,
        runs=[r for r, _ in members],
    )


def _log_tail(store: Store, oid: Any) -> tuple[str, int] | None:
    if not isinstance(oid, str):
        return None
    try:
        text = store.objects.get_bytes(oid).decode("utf-8", errors="replace")
    except LedgerError as e:
        return f"(the captured output cannot be read: {e.message})", 0
    lines = text.splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:]), len(lines)


def log_text(store: Store, run_id: str) -> str | None:
    from ..run.find import backed_record

    rec = _record(store, backed_record(store, run_id))
    oid = rec.get("stdout")
    if not isinstance(oid, str):
        return None
    return store.objects.get_bytes(oid).decode("utf-8", errors="replace")


def _divergence(store: Store, original: str, replay: str) -> dict[str, Any] | None:
    from ..records.base import record_from_json
    from ..records.run import Run
    from ..run.series import run_series
    from ..stats import compare_series

    try:
        a = record_from_json(run_record(store, original), Run)
        b = record_from_json(run_record(store, replay), Run)
        fd = (
            compare_series(run_series(store, a), run_series(store, b))
            .to_json()
            .get("first_divergence")
        )
    except (LedgerError, ValueError, TypeError, KeyError, AssertionError):
        return None
    return fd if isinstance(fd, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _config_sources(config: Any) -> list[str]:
    from ..capture.script_config import describe_sources

    return describe_sources(config)


def _replay_labels(
    store: Store, rid: str, replays: Sequence[str], verdicts: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """ "name · short id · kind" of a run and each of its replays (kind: original, bitwise,
    tolerance, seed N)."""
    from ..index.short_ids import short_ids_of
    from .labels import replay_kinds, run_label

    ids = [rid, *replays]
    recs = {r: run_record(store, r) for r in ids}
    short = short_ids_of(store, ids)
    kinds = {rid: "original", **replay_kinds(verdicts, recs)}
    return {r: run_label(recs[r], short.get(r, r), kinds.get(r, "replay")) for r in ids}


def run_page(store: Store, text: str) -> dict[str, Any]:
    """Everything ``ledger show`` gathers, plus checkpoints, the log tail and curves against
    the run's replays with the first divergence marked."""
    from ..run.show import describe_run
    from .svg import line_chart

    info = describe_run(store, text)
    run = info["run"]
    rid = run["run_id"]
    contract: dict[str, Any] = _dict(info.get("contract"))
    code: dict[str, Any] = _dict(info.get("code"))
    env: dict[str, Any] = _dict(info.get("environment"))
    config = info.get("resolved_config")
    params = flatten_params(config.get("resolved")) if isinstance(config, dict) else {}
    replays = [r["run_id"] for r in info.get("replays", [])]
    warnings: list[str] = list(info.get("warnings", []))
    first_div = _divergence(store, rid, replays[0]) if replays else None
    labels = _replay_labels(store, rid, replays, info.get("verdicts", []))
    charts = curves(store, [rid, *replays], dashed=replays, labels=labels, warnings=warnings)
    if first_div is not None:
        for chart in charts:
            if str(first_div.get("metric", "")).split("@")[0] == chart["metric"]:
                # Drawn again with the marker where original and replay first part.
                recs = [rid, *replays]
                chart["svg"] = line_chart(
                    [
                        Line(
                            labels[r],
                            _series_points(
                                store,
                                main_metrics(store, run_record(store, r))
                                .get(chart["metric"], {})
                                .get("series"),
                                "step",
                            ),
                            PALETTE[i % len(PALETTE)],
                            dashed=r in replays,
                            run_id=r,
                        )
                        for i, r in enumerate(recs)
                    ],
                    x_label=AXES["step"],
                    marker=(
                        float(first_div["step"]),
                        f"first divergence (step {first_div['step']})",
                    ),
                    title=chart["metric"],
                )
    scalars = {
        k: v for k, v in env.items() if isinstance(v, str | int | float | bool) and k != "kind"
    }
    from ..capture.scheduler import describe_job

    curation = _dict(info.get("curation"))
    recorded_tags = _dict(run.get("tags"))
    return {
        "run": run,
        "curated": {
            "name": curation.get("name") or run.get("name"),
            "recorded_name": run.get("name"),
            "renamed": bool(curation.get("name")) and curation.get("name") != run.get("name"),
            "tags": {**recorded_tags, **_dict(curation.get("tags"))},
            "retracted": curation.get("retracted") is True,
            "reason": curation.get("reason"),
            "when": curation.get("created"),
        },
        "record": info.get("record"),
        "job": describe_job(run.get("job") if isinstance(run.get("job"), dict) else None),
        "short_id": rid,
        "contract": contract,
        "code": {
            "commit": code.get("commit"),
            "dirty": code.get("dirty"),
            "patched": info.get("code_files", {}).get("patched", []),
            "untracked": info.get("code_files", {}).get("untracked", []),
        },
        "inputs": contract.get("inputs") or [],
        "params": params,
        "config_sources": _config_sources(config),
        "config_empty": config.get("empty_reason", "") if isinstance(config, dict) else "",
        "environment": scalars,
        "seeds": (run.get("runtime") or {}).get("seeds") or [],
        "outputs": run.get("outputs") or [],
        "checkpoints": [c for c in run.get("checkpoints") or [] if isinstance(c, dict)],
        "checks": run.get("inputs_after") or [],
        "notes": run.get("notes") or [],
        "metrics": run.get("metrics") or [],
        "replays": [
            {**r, "kind": labels.get(r["run_id"], "").rsplit(" · ", 1)[-1]}
            for r in info.get("replays", [])
        ],
        "verdicts": info.get("verdicts", []),
        "first_divergence": first_div,
        "localization": _run_localization(store, rid, run.get("replay_of"), replays),
        "charts": charts,
        "log": _log_tail(store, run.get("stdout")),
        "linked": bool(SAFE_ID.match(rid)),
        "warnings": warnings,
    }


def _run_localization(
    store: Store, rid: str, replay_of: Any, replays: list[str]
) -> dict[str, Any] | None:
    """Where this run and its first replay (or this replay and its original) first diverged,
    when both are traced: the same chain and module tree as their diff page, with its link."""
    from .localization import localization_view

    if replays:
        a, b = rid, replays[0]
    elif isinstance(replay_of, str) and replay_of:
        a, b = replay_of, rid
    else:
        return None
    loc = localization_view(store, a, b)
    if loc is None:
        return None
    linked = SAFE_ID.match(a) is not None and SAFE_ID.match(b) is not None
    return loc | {"diff": f"{a}--{b}" if linked else None}


def diff_page(store: Store, a: str, b: str) -> dict[str, Any]:
    from ..run.diff import diff_runs

    try:
        d = diff_runs(store, a, b)
    except (LedgerError, ValueError, TypeError, KeyError, AssertionError) as e:
        message = e.message if isinstance(e, LedgerError) else str(e).splitlines()[0]
        return {"a": a, "b": b, "error": message}
    from .localization import localization_view  # the first divergence, when both traced

    return d | {"localization": localization_view(store, a, b)}


def audits(
    store: Store,
    runs: Sequence[str] | None = None,
    limit: int = 20,
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Stored claim audits, newest first (``runs``: only those whose evidence names one of
    these runs), each read back from its record. An audit whose ref file the log does not
    back is left out (``warnings`` says why)."""
    import json

    from ..run.find import backed_refs

    out = []
    for name, oid in sorted(backed_refs(store, "audits/", warnings), reverse=True):
        audit_id = name.split("/", 1)[1]
        rec = _record(store, oid.strip())
        if rec.get("kind") != "audit" or not SAFE_ID.match(audit_id):
            continue
        if runs is not None and not any(r in json.dumps(rec) for r in runs):
            continue
        counts = rec.get("counts") or {}
        summary = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
        out.append({"audit_id": audit_id, "summary": summary or "no claims"})
        if len(out) >= limit:
            break
    return out


def audit_html(store: Store, audit_id: str) -> str:
    from ..audit import load_audit, render_html

    # The audit page is audits/<id>.html; a failed replay's page is diff/<run>--<replay>.html.
    return render_html(
        load_audit(store, audit_id), diff_href=lambda a, b: f"../diff/{a}--{b}.html#localization"
    )
