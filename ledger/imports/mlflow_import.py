"""``ledger import mlflow``: MLflow runs become sealed, imported ledger runs.

Each MLflow run gives one ``run`` record (schema 2, ``imported`` set, no contract): status,
times, params as the resolved config, every metric point as an ``api`` metric series, the
user's tags, the artifacts as a captured output tree, and MLflow's system tags and verbatim
params under ``imported``. Its run id is the MLflow start time and the first 8 hex digits of
the MLflow run id, so importing the same run again finds it already here.

Order: everything is read from MLflow first (artifacts downloaded into the ledger's ``tmp/``);
an error there leaves the ledger untouched. Then the objects and records, then one ``import``
log line and ref per run (docs/format.md, "Write ordering"), made through the door every import
passes (``share.door``: only refs ``ledger verify`` accepts, under the lease gc respects), then
the index.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._hashing import hash_bytes
from .._version import __version__
from ..capture.redact import redact_env, redact_json
from ..capture.trees import build_tree, put_tree
from ..records.config import ConfigCapture
from ..records.metrics import MetricSummary, build_series, summarize
from ..records.run import Imported, OutputCapture, Run, RunStatus
from ..run.ids import run_ref
from ..share.door import Arrival, admit, entry_lease
from ..store import Store
from .mlflow_read import MlflowRun, MlflowSource, read_runs, resolve_source

__all__ = ["ARTIFACTS", "MlflowImportReport", "import_mlflow", "ledger_run_id"]

ARTIFACTS = "mlflow-artifacts"  # the output path an imported run's artifacts are stored under
_STATUS: dict[str, RunStatus] = {"FINISHED": "succeeded", "FAILED": "failed", "KILLED": "killed"}
_INT = re.compile(r"^[+-]?\d{1,18}$")
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan)$", re.I)


@dataclass
class ImportedRun:
    run_id: str  # the ledger's
    mlflow_run_id: str
    name: str | None
    status: str
    metrics: int  # series
    points: int
    artifacts: int  # files
    artifact_bytes: int
    record: str | None = None  # the record's id (None on a dry run)


@dataclass
class MlflowImportReport:
    source: str
    dry_run: bool
    imported: list[ImportedRun] = field(default_factory=list)
    present: list[ImportedRun] = field(default_factory=list)  # imported before: left alone
    notes: list[str] = field(default_factory=list)


def ledger_run_id(mlflow_run_id: str, start_ms: int | None) -> str:
    """``20261130T074012.123000Z-0b5619de``: sorts by start time like recorded runs."""
    started = datetime.fromtimestamp((start_ms or 0) / 1000, UTC)
    tail = mlflow_run_id[:8].lower()
    if not re.fullmatch(r"[0-9a-f]{8}", tail):
        tail = hash_bytes(mlflow_run_id.encode())[3:11]
    return started.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + tail


def param_value(text: str) -> Any:
    """An MLflow param (always a string) as the value it most likely was: integers, floats,
    booleans and None typed, so ``--where params.lr<0.01`` compares numbers. The verbatim
    strings stay in ``imported.params``."""
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return {"True": True, "False": False, "true": True, "false": False, "None": None}.get(
        text, text
    )


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _series(store: Store, src: MlflowRun) -> tuple[list[MetricSummary], int]:
    summaries, points = [], 0
    t0 = src.start_ms or 0
    for metric in src.metrics:
        # by step, then time: the same history reads the same from every MLflow backend
        ordered = sorted(metric.points, key=lambda p: (p[0], p[1]))
        series = build_series(
            metric.key, "api", [(step, None, (ts - t0) / 1000, v) for step, ts, v in ordered]
        )
        summaries.append(summarize(series, store.put_json(series.to_json())))
        points += len(ordered)
    return summaries, points


def _artifacts(store: Store, folder: Path | None) -> tuple[list[OutputCapture], list[str]]:
    if folder is None:
        return [], []
    files = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()
    )
    tree = build_tree(folder, files, store)
    out = OutputCapture(
        path=ARTIFACTS, tree=put_tree(store, tree), files=len(tree.entries), bytes=tree.total_size
    )
    return [out], ([f"artifacts: {tree.note}"] if tree.note else [])


def _record(store: Store, src: MlflowRun, run_id: str, shown: str) -> tuple[Run, ImportedRun]:
    summaries, points = _series(store, src)
    outputs, notes = _artifacts(store, src.artifacts)
    if src.artifacts_note:
        notes.append(src.artifacts_note)
    params = redact_env(src.params)
    config = ConfigCapture(
        argv=[],
        resolved=redact_json({k: param_value(v) for k, v in sorted(src.params.items())}),
        notes=[f"params of MLflow run {src.run_id}, typed where they parse as numbers"],
    )
    tags = redact_env(src.tags)
    status = _STATUS.get(src.status)
    if status is None:
        status = "interrupted"
        notes.append(
            f"MLflow listed this run as {src.status} when it was imported: it was still "
            "running, or its process ended without telling MLflow; importing it again does "
            "not update it"
        )
    started = _time(src.start_ms) or datetime.fromtimestamp(0, UTC)
    ended = _time(src.end_ms)
    notes.append(
        f"imported from MLflow ({shown}, experiment {src.experiment!r}, run {src.run_id}): "
        "not replayable, ledger never saw its code, environment or data"
    )
    run = Run(
        schema_version=2,  # type: ignore[call-arg]  # the field is aliased to "schema"
        run_id=run_id,
        name=src.name,
        tags={k: v for k, v in sorted(tags.items()) if not k.startswith("mlflow.")},
        status=status,
        started=started,
        ended=ended,
        wall_seconds=None if ended is None else round((ended - started).total_seconds(), 6),
        host="",
        pid=0,
        contract=None,
        contract_digest=None,
        resolved_config=store.put_json(config.to_json()),
        metrics=summaries,
        outputs=outputs,
        ledger_version=__version__,
        notes=notes,
        imported=Imported(
            source="mlflow",
            tracking_uri=shown,
            experiment_id=src.experiment_id,
            experiment=src.experiment,
            run_id=src.run_id,
            status=src.status,
            artifact_uri=src.artifact_uri,
            params=dict(sorted(params.items())),
            tags={k: v for k, v in sorted(tags.items()) if k.startswith("mlflow.")},
            git_commit=src.tags.get("mlflow.source.git.commit"),
        ),
    )
    files = outputs[0].files if outputs else 0
    size = outputs[0].bytes if outputs else 0
    summary = ImportedRun(run_id, src.run_id, src.name, status, len(summaries), points, files, size)
    return run, summary


def _dry(src: MlflowRun, run_id: str) -> ImportedRun:
    status = _STATUS.get(src.status, "interrupted")
    points = sum(len(m.points) for m in src.metrics)
    return ImportedRun(run_id, src.run_id, src.name, status, len(src.metrics), points, 0, 0)


def _present(store: Store, src: MlflowRun, run_id: str, oid: str) -> ImportedRun:
    """An MLflow run imported before, as its ledger record says."""
    rec = store.get_json(oid)
    metrics = rec.get("metrics") or []
    outputs = rec.get("outputs") or []
    return ImportedRun(
        run_id,
        src.run_id,
        rec.get("name"),
        str(rec.get("status")),
        len(metrics),
        sum(int(m.get("count") or 0) for m in metrics),
        sum(int(o.get("files") or 0) for o in outputs),
        sum(int(o.get("bytes") or 0) for o in outputs),
        oid,
    )


def import_mlflow(
    store: Store,
    text: str,
    *,
    experiments: list[str] | None = None,
    run_ids: list[str] | None = None,
    dry_run: bool = False,
) -> MlflowImportReport:
    """Import the active runs of the MLflow store ``text`` (a path or tracking URI), or only
    those of ``experiments`` (names or ids) / ``run_ids``. A dry run reads and reports only."""
    source = resolve_source(text)
    report = MlflowImportReport(source=source.shown, dry_run=dry_run)
    store.tmp_dir.mkdir(parents=True, exist_ok=True)
    # Held from the first object written to the last ref: gc keeps what the import wrote.
    with contextlib.ExitStack() as lease:
        if not dry_run:
            lease.enter_context(entry_lease(store, "import"))
        return _import(store, source, report, experiments, run_ids, dry_run)


def _import(
    store: Store,
    source: MlflowSource,
    report: MlflowImportReport,
    experiments: list[str] | None,
    run_ids: list[str] | None,
    dry_run: bool,
) -> MlflowImportReport:
    work = Path(tempfile.mkdtemp(prefix="mlflow-import-", dir=store.tmp_dir))
    try:

        def wanted(mlflow_run_id: str, start_ms: int | None) -> bool:
            return store.refs.get(run_ref(ledger_run_id(mlflow_run_id, start_ms))) is None

        runs = read_runs(
            source, experiments or [], run_ids or [], None if dry_run else work, wanted
        )
        ids = [ledger_run_id(r.run_id, r.start_ms) for r in runs]
        records: list[tuple[str, Run, ImportedRun]] = []
        now_ms = datetime.now(UTC).timestamp() * 1000
        for src, run_id in zip(runs, ids, strict=True):
            here = store.refs.get(run_ref(run_id))
            latest = max(src.start_ms or 0, src.end_ms or 0)
            if here is None and latest > now_ms:
                # A log line is never older than the record it sets (docs/format.md, "Log"):
                # a run from a clock ahead of this one waits until this clock passes it.
                report.notes.append(
                    f"MLflow run {src.run_id} ({src.name}) was not imported: its times are "
                    f"{(latest - now_ms) / 1000:.0f} s ahead of this machine's clock; "
                    "import again once the clocks agree"
                )
            elif here is not None:
                report.present.append(_present(store, src, run_id, here))
            elif dry_run:
                report.imported.append(_dry(src, run_id))
            else:
                run, summary = _record(store, src, run_id, source.shown)
                if src.artifacts_note:
                    report.notes.append(f"MLflow run {src.run_id}: {src.artifacts_note}")
                summary.record = store.put_json(run.to_json())
                records.append((run_id, run, summary))
        arrivals = [
            Arrival(
                run_ref(run_id),
                summary.record or "",
                {"origin": f"mlflow:{source.shown}", "origin_head": None, "status": run.status},
            )
            for run_id, run, summary in records
        ]
        made = admit(
            store,
            arrivals,
            source=f"MLflow store {source.shown}",
            hint="report it as a bug of `ledger import mlflow`, with the MLflow run named",
        )
        for run_id, _, summary in records:
            added = run_ref(run_id) in made.added
            (report.imported if added else report.present).append(summary)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not runs:
        report.notes.append("no active MLflow runs in scope: nothing to import")
    if records:
        _sync_index(store, report)
    return report


def _sync_index(store: Store, report: MlflowImportReport) -> None:
    from ..index import Index

    try:
        with Index(store) as index:
            index.sync()
    except Exception as e:  # the index is a cache: the runs are safe in the objects and log
        report.notes.append(f"index not updated ({e}); run `ledger reindex`")
