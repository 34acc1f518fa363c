"""``ledger record``: freeze the contract, run the command, seal the run record.

Order (docs/format.md, "Write ordering"): every check that can fail on bad input runs before
the command starts; the contract's objects and a ``running`` record are written before launch;
after exit, metric series, logs and outputs are stored, then the sealed run record, then the
ref and log entry, then the index. A run whose recorder died shows as ``running`` with a dead
pid, which ``ledger ls`` reports as abandoned.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._canonical import format_datetime
from .._progress import stage
from .._version import __version__
from ..capture.metric_regex import MetricPattern
from ..capture.stdout_metrics import StdoutMetrics, compile_patterns
from ..errors import UsageError
from ..records.plain import plain, series_json, summary_json
from ..store import Store
from ..store.staging import open_staging, release_staging
from . import contract as contract_mod
from .contract import contract_digest
from .execute import ExecResult, execute, held_signals, stopped_by
from .ids import new_run_id, run_ref
from .options import RecordOptions
from .warm import SEAL_MODULES, warm_imports

if TYPE_CHECKING:  # the records are written as JSON (ledger/records/plain.py): no pydantic
    from ..records.metrics import MetricSeries, MetricSummary
    from ..records.run import Run, RunStatus

__all__ = ["Begun", "RecordOptions", "RecordResult", "begin", "finish", "record"]

HOOK_DIR = Path(__file__).parent.parent / "_hook"
_FREEZE_LOCK = threading.Lock()


@dataclass
class RecordResult:
    run_id: str
    record_oid: str
    run_json: dict[str, Any]  # the sealed run record, as stored
    exit_code: int  # what `ledger record` exits with: the child's, or 128+signal
    sweep_jobs: list[str] = field(default_factory=list)  # a Hydra multirun: its job runs
    sweep_error: str | None = None  # why (some of) its jobs were not recorded as runs
    # For the terminal, not stored: e.g. a --metric that matched nothing, with output lines
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def run(self) -> Run:
        """The sealed run as its model, validated at first use (``ledger record`` prints from
        ``run_json`` and never loads pydantic)."""
        from ..records.run import Run

        return Run.model_validate(self.run_json)


def _check_command(argv: Sequence[str], cwd: Path) -> None:
    if not argv:
        raise UsageError(
            "no command to record", hint="usage: ledger record [OPTIONS] -- CMD ARGS..."
        )
    exe = argv[0]
    if os.sep in exe:
        path = (cwd / exe) if not os.path.isabs(exe) else Path(exe)
        if not path.is_file():
            raise UsageError(f"command {exe!r} does not exist", hint="check the path")
        if not os.access(path, os.X_OK):
            raise UsageError(f"command {exe!r} is not executable", hint=f"chmod +x {exe}")
    elif shutil.which(exe) is None:
        raise UsageError(
            f"command {exe!r} was not found on PATH",
            hint="check the spelling, or activate the environment that provides it",
        )


def _check_utf8(opts: RecordOptions) -> None:
    """Paths and names go into records as UTF-8: refuse others (argv is kept as bytes)."""
    from ..capture.rawbytes import require_utf8

    require_utf8(str(opts.cwd.absolute()), "the working directory")
    for flag, paths in (("--input", opts.inputs), ("--output", opts.outputs)):
        for p in paths:
            require_utf8(str(p), f"{flag} path")
    for p in opts.configs:
        require_utf8(str(p), "--config path")
    require_utf8(opts.name or "", "--name")
    for key, value in opts.tags.items():
        require_utf8(f"{key}={value}", "--tag")
    for name in opts.env_names:
        require_utf8(name, "--env")
        require_utf8(os.environ.get(name, ""), f"the value of --env {name}")


def _validate(opts: RecordOptions) -> list[MetricPattern]:
    """Everything bad input can trip on, before anything is written or run."""
    _check_utf8(opts)
    _check_command(opts.command, opts.cwd)
    for p in opts.inputs:
        if not (opts.cwd / p).exists():
            raise UsageError(
                f"--input {p} does not exist", hint="give an existing file or directory"
            )
    for p in opts.configs:
        full = opts.cwd / p
        if not full.is_file():
            raise UsageError(f"--config {p} does not exist or is not a file")
        if not os.access(full, os.R_OK):
            raise UsageError(f"--config {p} is not readable", hint="check its permissions")
    patterns = compile_patterns(opts.metrics)
    for name in opts.env_names:
        if not name or "=" in name:
            raise UsageError(f"--env {name!r} is not a variable name", hint="e.g. --env MY_FLAG")
    return patterns


def _child_env(opts: RecordOptions, store: Store, run_id: str, staging: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(opts.extra_env)
    env["LEDGER_DIR"] = str(store.root)
    env["LEDGER_RUN_ID"] = run_id
    env["LEDGER_RUN_DIR"] = str(staging)
    # Live output through pipes: Python would otherwise block-buffer the child's stdout.
    env.setdefault("PYTHONUNBUFFERED", "1")
    if opts.seed_root is not None:
        env["LEDGER_SEED_ROOT"] = str(opts.seed_root)
    if HOOK_DIR.is_dir():
        env["LEDGER_HOOK_DIR"] = str(HOOK_DIR)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOK_DIR), env.get("PYTHONPATH")]))
    return env


def _store_series(store: Store, series: MetricSeries) -> MetricSummary:
    from ..records.metrics import summarize

    oid = store.put_json(series.to_json())
    return summarize(series, oid)


def _status(result: ExecResult) -> RunStatus:
    if result.returncode == 0:
        return "succeeded"
    if result.interrupted_by is not None:
        return "interrupted"
    if result.signal is not None:
        return "killed"
    return "failed"


@dataclass
class Begun:
    """A run whose contract is frozen and whose ``running`` record is written."""

    opts: RecordOptions
    store: Store
    run_id: str
    staging: Path
    frozen: Any
    base: dict[str, Any]
    started: datetime
    patterns: list[MetricPattern]
    copier: threading.Thread | None
    lease: int | None = None  # held while the run is in flight (ledger.store.staging)
    outputs_before: dict[str, Any] = field(default_factory=dict)  # outputs.snapshot_outputs
    # The monotonic clock at ``started`` (one pair, ledger._clock): the origin of every wall
    # time of the run's metrics, stdout's as much as the program's own.
    started_mono: float | None = None


def begin(opts: RecordOptions, store: Store) -> Begun:
    """Validate, freeze the contract, write the ``running`` record, start copying inputs."""
    from ..capture import gpus

    gpus.prefetch()  # nvidia-smi answers while the code is snapshot (the CLI may have asked)
    patterns = _validate(opts)
    store.check_writable()
    # The staging dir and its lease come first: gc keeps every object written or reused after
    # a live run's lease was taken, and freezing already writes objects.
    run_id = new_run_id()
    staging = store.root / "staging" / run_id
    lease = open_staging(staging)
    # Freezing reads configs, inputs and code, then the running record is written: any failure
    # here leaves no run and no staging dir behind.
    try:
        with _FREEZE_LOCK:  # replay --jobs records from several threads; freezing is short
            frozen = contract_mod.freeze(opts, store)
        return _begin_run(opts, store, frozen, run_id, staging, patterns, lease)
    except BaseException:
        release_staging(staging, lease)
        raise


def _begin_run(
    opts: RecordOptions,
    store: Store,
    frozen: Any,
    run_id: str,
    staging: Path,
    patterns: list[MetricPattern],
    lease: int | None,
) -> Begun:
    from .._clock import clock_pair

    wall, started_mono = clock_pair()
    started = datetime.fromtimestamp(wall, UTC)
    if frozen.inputs:
        from ..capture.data import store_manifests

        # The contract links each directory input's listing (docs/format.md, "Write
        # ordering"): stored first, so no crash leaves the running record's ref naming a
        # missing listing. The files themselves are content links, copied later.
        store_manifests(frozen.inputs, store)
    contract_oid = store.put_json(frozen.contract_json)
    # The name and tags are the user's strings: they pass the boundary as the rest does.
    from ..capture.boundary import for_store

    scrubber = frozen.scrubber
    name = None if opts.name is None else for_store("text", opts.name, scrubber, "--name")
    base: dict[str, Any] = dict(
        run_id=run_id,
        name=name,
        tags=for_store("json", dict(opts.tags), scrubber, "--tag"),
        started=format_datetime(started),
        host=socket.gethostname(),
        pid=os.getpid(),
        contract=contract_oid,
        contract_digest=contract_digest(frozen.contract_json, None),
        replay_of=opts.replay_of,
        ledger_version=__version__,
    )
    if scrubber is not None and scrubber.memo is not None:
        scrubber.memo.save()
    running = plain("run", status="running", notes=_notes(list(frozen.notes), scrubber), **base)
    store.set_ref(run_ref(run_id), store.put_json(running), op="start")

    # Copy inputs into the store while the command runs: it must not delay the launch.
    copier = None
    if frozen.inputs and opts.store_inputs:
        from ..capture.data import store_inputs

        copier = threading.Thread(target=store_inputs, args=(frozen.inputs, store), daemon=True)
        copier.start()
    from ..capture.outputs import snapshot_outputs

    before = snapshot_outputs(opts.outputs, opts.cwd)  # last thing before launch
    return Begun(
        opts,
        store,
        run_id,
        staging,
        frozen,
        base,
        started,
        patterns,
        copier,
        lease,
        before,
        started_mono,
    )


def finish(
    b: Begun, parser: StdoutMetrics, result: ExecResult, held: Sequence[int] = ()
) -> RecordResult:
    """Seal the run, update the index (unless the caller will), remove the staging directory.
    ``held``: the stop signals received since the command ended (execute.stopped_by)."""
    from ..index import Index

    try:
        if b.copier is not None and b.copier.is_alive():
            # The command has exited: what is left of the copy can be shown without
            # interleaving with its output.
            with stage("storing inputs"):
                b.copier.join()
        sealed = seal(
            b.store,
            b.opts,
            b.base,
            b.frozen,
            parser,
            result,
            b.staging,
            b.started,
            b.outputs_before,
            held,
            b.started_mono,
        )
        _sweep_jobs(b, sealed)
        sealed.warnings = [*parser.unmatched_warnings(), *sealed.warnings]
    except BaseException:
        release_staging(b.staging, b.lease, remove=False)  # left for gc, reported by verify
        raise
    release_staging(b.staging, b.lease)
    if not b.opts.update_index:
        return sealed
    try:
        with Index(b.store) as index:
            index.sync()
    except Exception as e:  # the index is a cache: the run is safe in the objects and log
        sealed.run_json["notes"].append(f"index not updated ({e}); run `ledger reindex`")
        sealed.__dict__.pop("run", None)  # the model, if built, is built again with the note
    return sealed


def _elapsed(result: ExecResult, started_mono: float | None) -> float:
    """Seconds from the run's start to the command's end: its wall time, and the setting up
    before its launch (freezing inputs and outputs) when the start's monotonic reading is
    known. Never less than the command's own wall time."""
    if started_mono is None:
        return result.wall_seconds
    elapsed = result.started_monotonic + result.wall_seconds - started_mono
    return elapsed if elapsed >= result.wall_seconds else result.wall_seconds


def _sweep_jobs(b: Begun, sealed: RecordResult) -> None:
    """A Hydra multirun: one run per job besides the sealed sweep run (ledger/sweeps.py)."""
    from .sweeps import read_jobs, record_sweep_jobs

    if not read_jobs(b.staging):  # no multirun: the sweep run's model is not needed
        return
    try:
        jobs = record_sweep_jobs(b.store, b.opts.cwd, b.frozen, sealed.run, b.staging)
    except Exception as e:  # the sweep run is sealed: it stays; each job run is whole or absent
        sealed.sweep_error = f"{type(e).__name__}: {e}"
        return
    sealed.sweep_jobs = [j.run_id for j in jobs]


def record(opts: RecordOptions, store: Store) -> RecordResult:
    from ..capture.secrets import preload

    b = begin(opts, store)
    # The secret detectors (0.2-0.4 s to import) are needed before launch only for what is not
    # in the clean-lines memo; the logs may need them after exit: import them during the run.
    importer = preload(delay=1.0)
    # Stdout points count from the run's start, as the program's own points do (ingest).
    parser = StdoutMetrics(b.patterns, t0=b.started_mono)
    # What sealing (and the caller, e.g. a replay's verdict) needs is imported while it runs.
    warmer = warm_imports((*SEAL_MODULES, *opts.warm))
    # Secrets known at launch are scrubbed before the logs reach the disk (seal scans them).
    scrubber = b.frozen.scrubber
    # held_signals: once the command has ended, a signal would cut the seal short. Entered
    # before execute(), which forwards signals while the command runs and then puts this
    # handler back: no moment between the two when a signal kills the recorder.
    with held_signals("the run's record is written") as held:
        result = execute(
            opts.command,
            run_id=b.run_id,
            cwd=opts.cwd,
            env=_child_env(opts, store, b.run_id, b.staging),
            stdout_log=b.staging / "stdout.log",
            stderr_log=b.staging / "stderr.log",
            stdout_sink=parser.stream() if b.patterns else None,
            stderr_sink=parser.stream() if b.patterns else None,
            stdout_filter=scrubber.stream("stdout") if scrubber is not None else None,
            stderr_filter=scrubber.stream("stderr") if scrubber is not None else None,
        )
        importer.cancel()
        warmer.join()
        return finish(b, parser, result, held)


def _notes(notes: list[str], scrubber: Any) -> list[str]:
    """The run's notes as stored: they name files and quote messages, so they pass the
    boundary too (a note about a file whose name was a secret must not name it)."""
    from ..capture.boundary import for_store

    return [for_store("text", n, scrubber, "the run's notes") for n in notes]


def seal(
    store: Store,
    opts: RecordOptions,
    base: dict[str, Any],
    frozen: Any,
    parser: StdoutMetrics,
    result: ExecResult,
    staging: Path,
    started: datetime,
    outputs_before: dict[str, Any] | None = None,
    held: Sequence[int] = (),
    started_mono: float | None = None,
) -> RecordResult:
    from ..capture import outputs as outputs_mod
    from ..capture.secrets import Scrubber, scrub_run_dir

    notes = list(frozen.notes)
    summaries: list[MetricSummary | dict[str, Any]] = []
    for name, points in sorted(parser.points.items()):  # as JSON: no pydantic (plain.py)
        series, values = series_json(name, "stdout", points)
        summaries.append(summary_json(series, values, store.put_json(series)))
    notes += parser.notes()

    with stage("storing outputs") if opts.outputs else contextlib.nullcontext():
        outputs, tb_series, out_notes = outputs_mod.capture_outputs(
            store, opts.outputs, opts.cwd, started.timestamp(), outputs_before
        )
    notes += out_notes
    summaries += [_store_series(store, s) for s in tb_series]

    runtime, runtime_summaries, runtime_notes = contract_mod.collect_runtime_safe(
        store, staging, started.timestamp()
    )
    summaries += runtime_summaries
    notes += runtime_notes
    checkpoints, checkpoint_notes = contract_mod.checkpoint_events(staging)
    notes += checkpoint_notes

    from .reads import seal_reads

    reads = seal_reads(store, opts, frozen, staging, started.timestamp())
    notes += reads.notes
    inputs_after, inputs_changed, in_notes = contract_mod.recheck_inputs(frozen, opts, store)
    notes += in_notes
    scrubber = frozen.scrubber or Scrubber([])
    notes += scrub_run_dir(staging, scrubber, logs_scrubbed=result.logs_filtered)
    resolved_oid, resolved_digest = contract_mod.resolve_config(store, frozen, staging)

    logs = {}
    notes += scrubber.notes()
    for stream in ("stdout", "stderr"):
        path = staging / f"{stream}.log"
        logs[stream] = store.objects.put_file(path) if path.exists() else None
    if inputs_changed:
        notes.append("an --input changed while the run was running: see inputs_after")

    base = dict(base)
    if reads.contract is not None:  # --auto-inputs added inputs to the contract
        base["contract"] = reads.contract
    base["contract_digest"] = contract_digest(frozen.contract_json, resolved_digest)
    # Decided last, just before the record is written: a stop signal that arrives while the
    # run is sealed, after a command dead of one, still counts (execute.stopped_by).
    late = stopped_by(result, held)
    if late != result.interrupted_by:
        result = dataclasses.replace(result, interrupted_by=late)
    run = plain(
        "run",
        status=_status(result),
        exit_code=result.returncode if result.returncode >= 0 else None,
        signal=result.signal,
        interrupted_by=result.interrupted_by,
        ended=format_datetime(started + timedelta(seconds=_elapsed(result, started_mono))),
        wall_seconds=round(result.wall_seconds, 6),
        cpu_user_seconds=round(result.cpu_user_seconds, 6),
        cpu_system_seconds=round(result.cpu_system_seconds, 6),
        peak_rss_bytes=result.peak_rss_bytes,
        resolved_config=resolved_oid,
        stdout=logs["stdout"],
        stderr=logs["stderr"],
        metrics=[m if isinstance(m, dict) else m.model_dump(mode="json") for m in summaries],
        outputs=[o.model_dump(mode="json") for o in outputs],
        inputs_after=[i.model_dump(mode="json") for i in inputs_after],
        inputs_changed=inputs_changed,
        runtime=runtime,
        checkpoints=[c.model_dump(mode="json") for c in checkpoints],
        notes=_notes(notes + result.notes, scrubber),
        **base,
    )
    if reads.oid is not None:  # schema 2 (docs/format.md): readers of 1 refuse it cleanly
        run["reads"], run["schema"] = reads.oid, 2
    from ..capture.scheduler import job_context

    job = job_context()  # the Slurm job (torchrun rendezvous) this recorder runs in
    if job is not None:
        run["job"], run["schema"] = job, 2
    if scrubber.memo is not None:
        scrubber.memo.save()
    oid = store.put_json(run)
    store.set_ref(run_ref(run["run_id"]), oid, op="seal", status=run["status"])
    code = result.returncode if result.returncode >= 0 else 128 + (result.signal or 0)
    if result.interrupted_by is not None and result.returncode != 0:
        # Ctrl-C (or a forwarded TERM/HUP/QUIT) stopped the run: 130 etc., whatever status
        # the program chose on its way out (docs/reference/exit-codes.md).
        code = 128 + result.interrupted_by
    return RecordResult(
        run_id=run["run_id"], record_oid=oid, run_json=run, exit_code=code, warnings=reads.warnings
    )
