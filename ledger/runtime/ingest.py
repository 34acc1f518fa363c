"""Read what the training process wrote into the staging dir and store it as objects.

The recorder calls ``collect_runtime`` after the command exits. Nothing here raises on what a
killed or buggy process may have left: torn last lines, half-written temp files, unknown files
and malformed values are skipped and described in ``notes``.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records.plain import plain, series_json, summary_json
from ..store import Store
from .metrics import check_name

if TYPE_CHECKING:  # imported where used: metrics alone are sealed without pydantic
    from ..records.metrics import MetricPoint
    from ..records.runtime import RngStateRef, RuntimeCapture

__all__ = ["collect_runtime", "collect_runtime_json", "combine_ranks"]


_RANK_FILE = re.compile(r"^rank-(\d+)(?:-worker-(\d+))?(?:-(.+))?\.(jsonl|json)$")

# rank -> metric -> [(step, samples, wall, value, n)]
Raw = dict[int, dict[str, list[tuple[int | None, int | None, float | None, float, int | None]]]]


def _files(run_dir: Path, kind: str, notes: list[str]) -> Iterator[tuple[Path, re.Match[str]]]:
    folder = run_dir / kind
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        m = _RANK_FILE.match(path.name)
        if m is None or not path.is_file():
            what = "an unfinished temp file" if path.name.startswith(".") else "an unknown file"
            notes.append(f"{kind}/{path.name}: skipped {what}")
            continue
        yield path, m


_NAMED_LINES = 10  # lines skipped that a file's notes name one by one; the rest are counted


class _Skips:
    """The lines of one staging file that were skipped: the first ``_NAMED_LINES`` named in the
    notes, the rest counted in one note at ``close`` (one note per line would copy a flood of
    junk, a program writing into ledger's staging file, into the run record)."""

    def __init__(self, rel: str, notes: list[str]) -> None:
        self.rel = rel
        self.notes = notes
        self.lines: list[int] = []

    def add(self, line: int, what: str) -> None:
        self.lines.append(line)
        if len(self.lines) <= _NAMED_LINES:
            self.notes.append(f"{self.rel}:{line}: skipped {what}")

    def close(self) -> None:
        more = self.lines[_NAMED_LINES:]
        if more:
            self.notes.append(
                f"{self.rel}: skipped {len(more)} more lines (lines {more[0]}-{more[-1]})"
            )


def _lines(path: Path, skips: _Skips) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line of a staging file that holds a JSON object, with its line number."""
    rel, notes = skips.rel, skips.notes
    try:
        data = path.read_bytes()
    except OSError as e:
        notes.append(f"{rel}: unreadable ({e})")
        return
    lines = data.split(b"\n")
    if lines[-1]:
        notes.append(
            f"{rel}: ignored a torn last line of {len(lines[-1])} bytes (killed mid-write)"
        )
    for i, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            skips.add(i, "an unreadable line")
            continue
        if isinstance(obj, dict):
            yield i, obj
        else:
            skips.add(i, "a line that is not an object")


def _json(path: Path, rel: str, notes: list[str]) -> dict[str, Any] | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        notes.append(f"{rel}: unreadable ({e})")
        return None
    if not isinstance(obj, dict):
        notes.append(f"{rel}: not a JSON object")
        return None
    return obj


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _read_metrics(
    run_dir: Path, notes: list[str], starts: dict[int, float], worlds: set[int]
) -> tuple[list[tuple[int, float, dict[str, Any]]], set[int]]:
    """Points as (rank, segment wall_start, line); fills ``starts`` with each rank's first start."""
    out: list[tuple[int, float, dict[str, Any]]] = []
    ranks: set[int] = set()
    for path, m in _files(run_dir, "metrics", notes):
        rank, rel = int(m.group(1)), f"metrics/{path.name}"
        if m.group(2) or m.group(3) or m.group(4) != "jsonl":
            notes.append(f"{rel}: skipped an unknown file")
            continue
        ranks.add(rank)
        start: float | None = None
        skips = _Skips(rel, notes)
        for i, obj in _lines(path, skips):
            if "header" in obj:
                h = obj["header"] if isinstance(obj["header"], dict) else {}
                ws = h.get("wall_start")
                start = float(ws) if isinstance(ws, int | float) else start
                if isinstance(h.get("world_size"), int):
                    worlds.add(h["world_size"])
                if h.get("rank", rank) != rank:
                    notes.append(f"{rel}: header says rank {h.get('rank')}; using {rank}")
                if start is not None:
                    starts[rank] = min(starts.get(rank, start), start)
            elif "note" in obj:
                notes.append(f"rank {rank}: {obj['note']}")
            elif isinstance(obj.get("v"), dict):
                out.append((rank, start if start is not None else math.nan, obj))
            else:
                skips.add(i, "a line that is neither header, note nor point")
        skips.close()
    return out, ranks


def _points(lines: list[tuple[int, float, dict[str, Any]]], zero: float, notes: list[str]) -> Raw:
    raw: Raw = defaultdict(lambda: defaultdict(list))
    bad = 0
    for rank, start, obj in lines:
        t = obj.get("t")
        wall = None
        if isinstance(t, int | float) and math.isfinite(start):
            wall = round(float(t) + start - zero, 6)
        step, samples, n = _int(obj.get("s")), _int(obj.get("x")), _int(obj.get("n"))
        for name, value in obj["v"].items():
            if (
                check_name(name) is not None
                or isinstance(value, bool)
                or not isinstance(value, int | float)
            ):
                bad += 1
                continue
            raw[rank][name].append((step, samples, wall, float(value), n))
    if bad:
        notes.append(f"skipped {bad} metric values with bad names or non-numeric values")
    return raw


def combine_ranks(
    per_rank: dict[int, list[tuple[int | None, int | None, float | None, float, int | None]]],
    name: str,
    notes: list[str],
) -> list[MetricPoint]:
    """Per step: Σ v_r·n_r / Σ n_r over the ranks that logged it. ``n`` is the count the rank
    passed, else the growth of its ``samples`` since its previous point of this metric."""
    groups: dict[tuple[int, int], list[tuple[int, int | None, float | None, float, int | None]]]
    groups = defaultdict(list)
    unstepped = unweighted = 0
    for rank in sorted(per_rank):
        seen: dict[int, int] = defaultdict(int)
        prev = 0
        for step, samples, wall, value, n in per_rank[rank]:
            weight = n
            if weight is None and samples is not None and samples >= prev:
                weight = samples - prev
            if samples is not None:
                prev = samples
            if step is None:
                unstepped += 1
                continue
            groups[(seen[step], step)].append((rank, samples, wall, value, weight))
            seen[step] += 1
    out: list[MetricPoint] = []
    for (_, step), members in sorted(groups.items()):
        weights = [w for *_, w in members]
        if any(w is None for w in weights):
            unweighted += 1
            weights = [1] * len(members)
        total = sum(w for w in weights if w is not None)
        if total == 0:
            notes.append(f"{name}: step {step} has no samples on any rank; not combined")
            continue
        value = sum(m[3] * w for m, w in zip(members, weights, strict=True) if w) / total
        samples_all = [m[1] for m in members]
        walls = [m[2] for m in members if m[2] is not None]
        x = sum(s for s in samples_all if s is not None) if None not in samples_all else None
        out.append((step, x, max(walls) if walls else None, value))
    if unstepped:
        notes.append(f"{name}: {unstepped} points without a step were not combined")
    if unweighted:
        notes.append(f"{name}: {unweighted} steps combined unweighted (log samples= or n=)")
    return out


def collect_runtime(
    run_dir: Path, store: Store, *, started_at: float | None = None
) -> RuntimeCapture:
    """Everything the runtime wrote under ``run_dir``; ``started_at`` (epoch seconds) is the zero
    of the wall axis, by default the earliest process start."""
    from ..records.runtime import RuntimeCapture

    return RuntimeCapture.model_validate(
        collect_runtime_json(run_dir, store, started_at=started_at)
    )


def collect_runtime_json(
    run_dir: Path, store: Store, *, started_at: float | None = None
) -> dict[str, Any]:
    """``collect_runtime``'s capture as JSON: metric series are built without pydantic
    (ledger/records/plain.py); seeds, RNG states, determinism reports and alerts, when the
    process wrote any, are validated by their models."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    starts: dict[int, float] = {}
    worlds: set[int] = set()
    lines, ranks = _read_metrics(run_dir, notes, starts, worlds)
    zero = started_at if started_at is not None else min(starts.values(), default=0.0)
    raw = _points(lines, zero, notes)
    single = set(raw) <= {0} and max(worlds, default=1) == 1

    summaries: list[dict[str, Any]] = []
    by_metric: dict[str, dict[int, Any]] = defaultdict(dict)
    for rank in sorted(raw):
        for name, pts in raw[rank].items():
            by_metric[name][rank] = pts
            series, values = series_json(
                name, "api", [p[:4] for p in pts], rank=None if single else rank
            )
            summaries.append(summary_json(series, values, store.put_json(series)))
    for name in sorted(by_metric):
        if len(by_metric[name]) > 1:
            combined = combine_ranks(by_metric[name], name, notes)
            series, values = series_json(name, "combined", combined)
            summaries.append(summary_json(series, values, store.put_json(series)))

    parts = _validated_parts(run_dir, store, zero, ranks, worlds, notes)
    parts["traces"] = _traces(run_dir, store, notes)
    return plain(
        "runtime",
        ranks=sorted(ranks),
        world_size=max(worlds) if worlds else None,
        metrics=summaries,
        notes=notes,
        **parts,
    )


def _traces(run_dir: Path, store: Store, notes: list[str]) -> list[dict[str, Any]]:
    """Each rank's ``traces/rank-<r>.jsonl`` (``ledger.torch.tracing``) as one object: the
    header its process wrote first and the traced steps in order."""
    out: list[dict[str, Any]] = []
    for path, m in _files(run_dir, "traces", notes):
        rel = f"traces/{path.name}"
        if m.group(2) or m.group(3) or m.group(4) != "jsonl":
            notes.append(f"{rel}: skipped an unknown file")
            continue
        header: dict[str, Any] | None = None
        steps: list[dict[str, Any]] = []
        skips = _Skips(rel, notes)
        for i, obj in _lines(path, skips):
            if isinstance(obj.get("header"), dict):
                header = header or obj["header"]
            elif _int(obj.get("s")) is not None:
                steps.append(obj)
            else:
                skips.add(i, "a line that is neither header nor step")
        skips.close()
        every = _int((header or {}).get("every"))
        if header is None or not every:
            notes.append(f"{rel}: no header; the trace was not kept")
            continue
        oid = store.put_json({"header": header, "steps": steps})
        out.append({"rank": int(m.group(1)), "every": every, "steps": len(steps), "trace": oid})
    return out


def _validated_parts(
    run_dir: Path, store: Store, zero: float, ranks: set[int], worlds: set[int], notes: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Seeds, RNG states, determinism reports and alerts, as their models dump them."""
    parts: dict[str, list[dict[str, Any]]] = {
        "seeds": [],
        "rng_states": [],
        "determinism": [],
        "alerts": [],
    }
    if not any((run_dir / d).is_dir() for d in ("seeds", "rng", "determinism", "alerts")):
        return parts  # the models (and pydantic) are not needed
    from pydantic import ValidationError

    from ..records.rng import RngState
    from ..records.runtime import MonitorAlert, RankDeterminism, RngStateRef, SeedInfo

    for path, m in _files(run_dir, "seeds", notes):
        body = _json(path, f"seeds/{path.name}", notes)
        if body is not None:
            try:
                seed = SeedInfo.model_validate(body)
                parts["seeds"].append(seed.model_dump(mode="json"))
                ranks.add(int(m.group(1)))
                worlds.add(seed.world_size)
            except ValidationError as e:
                notes.append(f"seeds/{path.name}: invalid ({e.error_count()} errors)")

    states: list[RngStateRef] = []
    for path, m in _files(run_dir, "rng", notes):
        body = _json(path, f"rng/{path.name}", notes)
        if body is None:
            continue
        try:
            state = RngState.model_validate(body.get("state"))
            t, ws = body.get("t"), body.get("wall_start")
            wall = (
                round(t + ws - zero, 6) if isinstance(t, float) and isinstance(ws, float) else None
            )
            states.append(
                RngStateRef(
                    rank=int(m.group(1)),
                    worker=body.get("worker"),
                    label=body.get("label", ""),
                    step=body.get("step"),
                    state=store.put_json(state.model_dump(mode="json")),
                    seed=body.get("seed"),
                    wall=wall,
                )
            )
            ranks.add(int(m.group(1)))
        except (ValidationError, TypeError, ValueError) as e:
            notes.append(f"rng/{path.name}: invalid ({str(e).splitlines()[0]})")
    states.sort(key=lambda s: (s.rank, s.worker if s.worker is not None else -1, s.wall or 0))
    parts["rng_states"] = [s.model_dump(mode="json") for s in states]

    for path, m in _files(run_dir, "determinism", notes):
        body = _json(path, f"determinism/{path.name}", notes)
        if body is not None:
            try:
                report = RankDeterminism.model_validate(body)
                parts["determinism"].append(report.model_dump(mode="json"))
                ranks.add(int(m.group(1)))
            except ValidationError as e:
                notes.append(f"determinism/{path.name}: invalid ({e.error_count()} errors)")

    for path, m in _files(run_dir, "alerts", notes):
        skips = _Skips(f"alerts/{path.name}", notes)
        for i, obj in _lines(path, skips):
            try:
                alert = MonitorAlert.model_validate(obj)
                parts["alerts"].append(alert.model_dump(mode="json"))
                ranks.add(int(m.group(1)))
            except ValidationError as e:
                skips.add(i, f"an invalid alert ({e.error_count()} errors)")
        skips.close()
    return parts
