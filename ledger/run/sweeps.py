"""Hydra multirun sweeps: one run per job, grouped under the sweep's run.

``ledger record -- python train.py -m lr=0.1,0.01`` records the process as one run, the
*sweep run*, as for any command. When Hydra ran a multirun in it, the startup hook wrote one
``hydrajob-<pid>-<n>.json`` per job (number, overrides, output dir, start and end, status) and
teed what the job printed (``.out``/``.err``); after the sweep run is sealed, each job becomes a
*job run* of its own:

- its contract is the sweep's with the command of this job alone: ``-m`` dropped, the command
  line's task overrides replaced by the job's (``lr=0.1``), and ``hydra.run.dir`` set to the
  job's output dir, so that ``ledger replay JOB`` runs just that job and writes where it wrote;
- its config record holds the config files and that job's Hydra config;
- its stdout/stderr are the job's own output (scrubbed of secrets like the sweep's logs), its
  stdout metrics are matched in them, and the sweep's in-process metrics (``ledger.log_metric``)
  logged between the job's start and end are its own (both read on the monotonic clock, which
  no clock step, NTP slew or preemption between two clock reads can move: ``_in_window``);
- its outputs are what the job wrote in its output dir (Hydra's ``.hydra/`` excepted);
- its status is the job's: succeeded, failed (the task raised) or interrupted.

The link is in the tags: the job run has ``sweep`` (the sweep run's id) and ``sweep.job`` (the
job number); the sweep run is sealed before its jobs, so it names them in no field: the index
groups them by the tag.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..records.metrics import MetricSummary
    from ..records.run import OutputCapture, Run, RunStatus
    from ..store import Store

__all__ = ["SWEEP_JOB_TAG", "SWEEP_TAG", "job_argv", "read_jobs", "record_sweep_jobs"]

SWEEP_TAG = "sweep"
SWEEP_JOB_TAG = "sweep.job"
_MULTIRUN_FLAGS = ("-m", "--multirun")


@dataclass(frozen=True)
class SweepJob:
    stem: str
    num: int
    config_seq: int
    pid: int
    overrides: list[str]
    output_dir: str
    started: float
    ended: float | None
    status: str
    error: str
    # The bounds on the monotonic clock (None from a hook that did not note them).
    started_mono: float | None = None
    ended_mono: float | None = None


def read_jobs(staging: Path) -> list[SweepJob]:
    """The multirun jobs the hook noted, by job number; unreadable notes are skipped."""
    jobs: list[SweepJob] = []
    for f in sorted((staging / "config").glob("hydrajob-*.json")):
        try:
            raw = json.loads(f.read_text(encoding="utf-8"))
            jobs.append(
                SweepJob(
                    stem=str(raw["stem"]),
                    num=int(raw["num"]),
                    config_seq=int(raw["config_seq"]),
                    pid=int(raw["pid"]),
                    overrides=[str(o) for o in raw["overrides"]],
                    output_dir=str(raw["output_dir"]),
                    started=float(raw["started"]),
                    ended=float(raw["ended"]) if raw.get("ended") is not None else None,
                    status=str(raw["status"]),
                    error=str(raw.get("error", "")),
                    started_mono=_float_or_none(raw.get("started_mono")),
                    ended_mono=_float_or_none(raw.get("ended_mono")),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(jobs, key=lambda j: (j.num, j.started))


def _float_or_none(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _script_end(argv: list[str]) -> int:
    """Index of the script in ``argv``: its arguments (Hydra's) follow it."""
    name = Path(argv[0]).name if argv else ""
    if name.startswith("python"):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 1
        return i + 1 if i < len(argv) and argv[i] == "-m" else i
    return 0


# Hydra's flags that take a value: the value is no override.
_VALUE_FLAGS = frozenset(
    {"--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd", "--package", "-p"}
    | {"--experimental-rerun"}
)


def _is_hydra_override(arg: str) -> bool:
    key = arg.split("=", 1)[0].lstrip("+~")
    return key == "hydra" or key.startswith("hydra.")


def job_argv(argv: list[str], overrides: list[str], run_dir: str | None) -> list[str]:
    """The command that runs one job alone: the multirun flag and the command line's task
    overrides (every positional argument of a Hydra app is an override) dropped, the job's
    overrides (and ``hydra.run.dir``) appended."""
    end = _script_end(argv)
    head, tail = argv[: end + 1], argv[end + 1 :]
    kept: list[str] = []
    value_next = False
    for arg in tail:
        if value_next:
            kept.append(arg)
            value_next = False
        elif arg in _MULTIRUN_FLAGS:
            continue
        elif arg.startswith("-"):
            kept.append(arg)
            value_next = arg in _VALUE_FLAGS
        elif _is_hydra_override(arg) and not arg.startswith("hydra.run.dir="):
            kept.append(arg)
    return [*head, *kept, *overrides, *([f"hydra.run.dir={run_dir}"] if run_dir else [])]


def record_sweep_jobs(store: Store, cwd: Path, frozen: Any, sweep: Run, staging: Path) -> list[Run]:
    """Seal one run per multirun job of ``sweep`` (module doc); none when it ran no multirun."""
    from .ids import run_ref

    jobs = read_jobs(staging)
    if not jobs or sweep.replay_of is not None:
        # A replay of a sweep reruns the whole sweep and is judged as one run.
        return []
    made = []
    frames = _clock_frames(staging)
    for job in jobs:
        run = _job_run(store, cwd, frozen, sweep, staging, job, frames.get(job.pid))
        store.set_ref(
            run_ref(run.run_id), store.put_json(run.to_json()), op="seal", status=run.status
        )
        made.append(run)
    return made


def _job_run(
    store: Store,
    cwd: Path,
    frozen: Any,
    sweep: Run,
    staging: Path,
    job: SweepJob,
    frame: tuple[float, float] | None,
) -> Run:
    from ..capture.config import build_config_capture, collect_hydra_captures
    from ..capture.outputs import capture_outputs
    from ..capture.secrets import Scrubber
    from ..records.run import Run
    from .contract import contract_digest
    from .ids import new_run_id

    contract = frozen.contract
    out_dir = Path(job.output_dir)
    rel_dir = os.path.relpath(out_dir, cwd) if out_dir.is_absolute() else str(out_dir)
    inside = not rel_dir.startswith("..")
    argv = job_argv(list(contract.argv), job.overrides, rel_dir if inside else None)
    outputs = _output_paths(cwd, rel_dir) if inside else []
    child_contract = contract.model_copy(
        update={"argv": argv, "argv_b64": None, "outputs": [str(p) for p in outputs]}
    )
    contract_oid = store.put_json(child_contract.to_json())
    caps = [
        c for c in collect_hydra_captures(staging) if (c.pid, c.seq) == (job.pid, job.config_seq)
    ]
    config = build_config_capture(argv, files=frozen.config_files, hydra=caps)
    config_oid = store.put_json(config.to_json())

    scrubber = frozen.scrubber or Scrubber([])
    logs, stdout_series, notes = _job_logs(store, staging, job, contract.metric_patterns, scrubber)
    started = datetime.fromtimestamp(job.started, UTC)
    ended = datetime.fromtimestamp(job.ended, UTC) if job.ended is not None else sweep.ended
    captured: list[OutputCapture] = []
    tb: list[Any] = []
    if outputs:
        captured, tb, out_notes = capture_outputs(store, outputs, cwd, job.started, None)
        notes += out_notes
    metrics = stdout_series + _in_window(store, sweep, job, frame)
    metrics += [_put_series(store, s) for s in tb]
    status = _status(job, sweep)
    if job.error:
        notes.append(f"the job raised {job.error}")
    notes.append(f"job {job.num} of Hydra multirun sweep run {sweep.run_id}")
    return Run(
        run_id=new_run_id(started),
        name=f"{sweep.name}#{job.num}" if sweep.name else None,
        tags={**sweep.tags, SWEEP_TAG: sweep.run_id, SWEEP_JOB_TAG: str(job.num)},
        status=status,
        exit_code={"succeeded": 0, "failed": 1}.get(status),
        started=started,
        ended=ended,
        wall_seconds=round((ended - started).total_seconds(), 6) if ended else None,
        host=sweep.host,
        pid=sweep.pid,
        contract=contract_oid,
        contract_digest=contract_digest(child_contract, config.config_digest()),
        resolved_config=config_oid,
        stdout=logs.get("stdout"),
        stderr=logs.get("stderr"),
        metrics=metrics,
        outputs=captured,
        ledger_version=sweep.ledger_version,
        notes=notes,
    )


def _status(job: SweepJob, sweep: Run) -> RunStatus:
    if job.status in ("succeeded", "failed", "interrupted"):
        return job.status  # type: ignore[return-value]
    # Still "running" when the process ended: it was stopped mid-job.
    return sweep.status if sweep.status in ("interrupted", "killed") else "failed"


def _output_paths(cwd: Path, rel_dir: str) -> list[Path]:
    """The job's output dir's entries, Hydra's own ``.hydra/`` excepted: what it wrote."""
    root = cwd / rel_dir
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [Path(rel_dir, n) for n in names if n != ".hydra"]


def _job_logs(
    store: Store, staging: Path, job: SweepJob, patterns: list[str], scrubber: Any
) -> tuple[dict[str, str | None], list[MetricSummary], list[str]]:
    from ..capture.secrets import MAX_DETECT_BYTES, redact_lines
    from ..capture.stdout_metrics import StdoutMetrics, compile_patterns
    from ..records.metrics import build_series

    parser = StdoutMetrics(compile_patterns(patterns)) if patterns else None
    logs: dict[str, str | None] = {}
    notes: list[str] = []
    for stream, ext in (("stdout", "out"), ("stderr", "err")):
        path = staging / "config" / f"{job.stem}.{ext}"
        if not path.is_file():
            logs[stream] = None
            continue
        data = scrubber.scrub(path.read_bytes(), stream)
        if len(data) <= MAX_DETECT_BYTES:
            data, found = redact_lines(data, stream)
            if found:
                notes.append(f"lines holding secrets were redacted in the job's {stream}")
        logs[stream] = store.objects.put_bytes(data)
        if parser is not None:
            sink = parser.stream()
            sink.write(data)
            sink.close()
    series = []
    if parser is not None:
        for name, points in sorted(parser.points.items()):
            # Matched after the job ended: the wall time of a point is unknown.
            timeless = [(step, n, None, v) for step, n, _, v in points]
            series.append(_put_series(store, build_series(name, "stdout", timeless)))
    return logs, series, notes


def _clock_frames(staging: Path) -> dict[int, tuple[float, float]]:
    """Each process's first metrics header: pid -> (wall_start, mono_start), the two clocks
    read together when its run attached (``ledger.runtime.run.clock_pair``). Only header lines
    are parsed; a file that cannot be read, or a header without both, gives nothing."""
    from ..runtime.ingest import _files

    frames: dict[int, tuple[float, float]] = {}
    for path, _ in _files(staging, "metrics", []):
        try:
            with open(path, "rb") as f:
                for line in f:
                    if not line.startswith(b'{"header"'):
                        continue
                    try:
                        h = json.loads(line)["header"]
                        pid, ws, ms = h["pid"], h["wall_start"], h["mono_start"]
                    except (ValueError, KeyError, TypeError):
                        continue
                    wall, mono = _float_or_none(ws), _float_or_none(ms)
                    if isinstance(pid, int) and wall is not None and mono is not None:
                        frames.setdefault(pid, (wall, mono))
        except OSError:
            continue
    return frames


def _in_window(
    store: Store, sweep: Run, job: SweepJob, frame: tuple[float, float] | None
) -> list[MetricSummary]:
    """The sweep's in-process metric points logged while the job ran.

    A point's wall time is its process's ``wall_start`` plus a monotonic offset. With the
    job's bounds read on the monotonic clock and the process's header pairing the two clocks
    (``frame``), the bounds are put on the points' own axis: the test is then monotonic
    against monotonic, whatever the wall clock did in between (set back by NTP, slewed over a
    long sweep, or the process preempted between reading the two). Without them (a hook or a
    process that did not note them), the bounds are the hook's wall times."""
    from ..records.base import record_from_json
    from ..records.metrics import MetricSeries, build_series

    t0 = sweep.started.timestamp()
    if frame is not None and job.started_mono is not None:
        wall_start, mono_start = frame
        lo = wall_start + (job.started_mono - mono_start) - t0
        hi = (
            wall_start + (job.ended_mono - mono_start) - t0
            if job.ended_mono is not None
            else float("inf")
        )
    else:
        lo = job.started - t0
        hi = (job.ended if job.ended is not None else float("inf")) - t0
    out = []
    for m in sweep.metrics:
        if m.source == "stdout":
            continue  # matched again in the job's own output
        series = record_from_json(store.get_json(m.series), MetricSeries)
        points = [
            (s, n, w - lo if w is not None else None, v)
            for s, n, w, v in zip(
                series.step, series.samples, series.wall, series.value, strict=True
            )
            if w is not None and lo <= w <= hi
        ]
        if points:
            out.append(_put_series(store, build_series(m.name, m.source, points, m.rank)))
    return out


def _put_series(store: Store, series: Any) -> MetricSummary:
    from ..records.metrics import summarize

    return summarize(series, store.put_json(series.to_json()))
