"""``ledger replay``: rebuild a run, run it again through the recorder, and judge the result."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from ..errors import LedgerError, ReplayError, UsageError
from ..records.base import record_from_json
from ..records.contract import Contract
from ..records.run import Run
from ..records.verdict import Verdict
from ..run.find import load_run
from ..run.imported import not_replayable
from ..run.lineage import code_source
from ..run.series import final_value, run_series
from ..store import Store
from .compared import (
    EMPTY_OID,
    compared_counts,
    compared_nothing_but_exit,
    compared_text,
    is_compared_file,
)
from .options import ReplayOptions
from .seed_effect import check_first_replays, check_seed_effect, refuse_unvarying_seed
from .single import ReplayInterrupted, _one_replay
from .workspace import Workspace

__all__ = ["ReplayInterrupted", "ReplayOptions", "ReplayOutcome", "replay"]


@dataclass
class ReplayOutcome:
    verdict: Verdict
    verdict_oid: str
    workspaces: list[Path]

    @property
    def exit_code(self) -> int:
        return {"reproduced": 0, "not-reproduced": 1, "inconclusive": 1, "could-not-replay": 7}[
            self.verdict.outcome
        ]


def _validate(opts: ReplayOptions) -> None:
    opts.validate()
    if (opts.rtol is None) != (opts.atol is None):
        # Only one given: take the other from 0 so the user's intent is kept explicit. In
        # every mode: bitwise compares without them, but its output files' settings, like
        # compare_series, take both or neither (one alone failed after the replay had run).
        opts.rtol = opts.rtol or 0.0
        opts.atol = opts.atol or 0.0


def _drift(store: Store, contract: Contract, opts: ReplayOptions) -> list[dict[str, Any]]:
    """How the environment the replayed command will get differs from the recorded one:
    this process's, with the variables the replay restores (a ``PYTHONPATH`` recorded with
    ``--env`` included) and the packages found on the import path they give."""
    import os

    from ..capture.env import compare_environments, fingerprint, import_path
    from ..records.env import Environment
    from .single import replay_env

    recorded = record_from_json(store.get_json(contract.environment), Environment)
    environ = {**os.environ, **replay_env(contract, opts)}
    current = fingerprint(contract.env_names, environ, path=import_path(environ, contract.cwd))
    return [d.model_dump(mode="json") for d in compare_environments(recorded, current)]


def _resume_point(run: Run, text: str) -> tuple[str, int]:
    """(checkpoint id, step) of a checkpoint the original run saved, by id prefix or step."""
    saves = [
        (e.checkpoint_digest, e.step)
        for e in run.checkpoints
        if e.event == "save" and e.step is not None  # only a step says where to resume
    ]
    digits = text[3:] if text.startswith("b3:") else text
    by_id = [c for c in saves if c[0][3:].startswith(digits)] if len(digits) >= 4 else []
    by_step = [c for c in saves if text.isdigit() and c[1] == int(text)]
    found = by_id or by_step
    if len(found) != 1:
        listed = ", ".join(f"step {step} {oid[:15]}" for oid, step in saves) or "none"
        raise UsageError(
            f"--from-checkpoint {text!r} matches {len(found)} checkpoint(s) of run {run.run_id}",
            hint=f"give a step or id prefix of one it saved: {listed}",
        )
    return found[0]


def _determinism_drift(original: Run, replay_run: Run) -> list[str]:
    """Settings applied by ``ledger.torch.deterministic()`` that differ between the two runs."""

    def by_rank(run: Run) -> dict[int, dict[str, Any]]:
        rows = (run.runtime or {}).get("determinism") or []
        return {int(r["rank"]): dict(r["settings"]) for r in rows if isinstance(r, dict)}

    a, b = by_rank(original), by_rank(replay_run)
    out = []
    for rank in sorted(a.keys() | b.keys()):
        ra, rb = a.get(rank, {}), b.get(rank, {})
        for key in sorted(ra.keys() | rb.keys()):
            if ra.get(key) != rb.get(key):
                out.append(f"rank {rank} {key}: {ra.get(key)!r} -> {rb.get(key)!r}")
    return out


def _recorded_root(run: Run) -> int | None:
    seeds = (run.runtime or {}).get("seeds") or []
    for s in seeds if isinstance(seeds, list) else []:
        if isinstance(s, dict) and isinstance(s.get("root"), int):
            return int(s["root"])
    return None


def replay(store: Store, run_text: str, opts: ReplayOptions) -> ReplayOutcome:
    """Replay a run and store the verdict. Every failure (Ctrl-C included) removes the
    workspaces it made unless ``keep_workspace``; an interrupted replay stores no verdict."""
    _validate(opts)
    if opts.executor is not None and opts.executor.remote is not None:
        from ..share.remote import default_remote, list_remotes, remote_url

        # A typo of a remote's name is refused here, before any replay runs or is pushed.
        remote_url(list_remotes(store), default_remote(store), opts.executor.remote)
    _, run = load_run(store, run_text)
    if run.status == "running":
        raise ReplayError(f"run {run.run_id} is still running (or was abandoned); not replayable")
    if run.imported is not None or run.contract is None:
        raise not_replayable(run)
    contract = record_from_json(store.get_json(run.contract), Contract)
    contract = contract.model_copy(update={"code": code_source(store, run, contract)})
    drift = _drift(store, contract, opts)
    numeric_drift = [d for d in drift if d.get("affects_numerics")]
    if opts.strict_env and numeric_drift:
        raise ReplayError(
            f"the environment differs from the recorded one in {len(numeric_drift)} field(s) "
            "that can change numerics: " + ", ".join(d["field"] for d in numeric_drift[:8]),
            hint="replay without --strict-env to run anyway (the verdict is labelled)",
        )
    labels = ["different-environment"] if numeric_drift else []
    notes: list[str] = []
    settings: dict[str, Any] = {
        "mode": opts.mode,
        "rtol": opts.rtol,
        "atol": opts.atol,
        "per_metric": {k: list(v) for k, v in opts.per_metric.items()},
    }
    root = contract.seed_root if contract.seed_root is not None else _recorded_root(run)

    resume: tuple[str, int] | None = None
    if opts.from_checkpoint is not None:
        if opts.mode == "seeds":
            raise UsageError("--from-checkpoint checks one continuation: use bitwise or tolerance")
        resume = _resume_point(run, opts.from_checkpoint)
        settings["from_checkpoint"] = {"checkpoint": resume[0], "step": resume[1]}
        notes.append(
            f"resumed from checkpoint {resume[0]} (step {resume[1]}): metrics after that step "
            "are compared with the original's (exact-resume check)"
        )

    made: list[Path] = []
    try:
        return _replay_and_judge(
            store, run, contract, opts, drift, labels, notes, settings, root, resume, made
        )
    except BaseException as e:
        if not opts.keep_workspace:
            for path in made:
                shutil.rmtree(path, ignore_errors=True)
        if made:
            _index_replay_runs(store)
        if isinstance(e, Exception) and not isinstance(e, LedgerError):
            # The replay's own failure (a full disk, a comparator that broke), not the
            # program's: it could not replay, and no verdict was stored.
            kept = f"; the workspace is kept at {', '.join(map(str, made))}" if made else ""
            raise ReplayError(
                f"the replay failed before it could give a verdict: {type(e).__name__}: {e}",
                hint="no verdict was stored" + (kept if opts.keep_workspace else ""),
            ) from e
        raise


def _index_replay_runs(store: Store) -> None:
    """The replay runs recorded before a replay stopped without a verdict (a seeds check, a
    failure, Ctrl-C) stay recorded: put them in the index, as a verdict would have."""
    from ..index import Index

    try:
        with Index(store) as index:
            index.sync()
    except Exception:  # the replay's own error is the one to report
        pass  # `ledger reindex` rebuilds it from the records


def _replay_and_judge(
    store: Store,
    run: Run,
    contract: Contract,
    opts: ReplayOptions,
    drift: list[dict[str, Any]],
    labels: list[str],
    notes: list[str],
    settings: dict[str, Any],
    root: int | None,
    resume: tuple[str, int] | None,
    made: list[Path],
) -> ReplayOutcome:
    from ..stats import Tolerance, compare_series
    from .compare.volatile import not_compared_text, volatile_names
    from .compare_outputs import compare_run_outputs

    if opts.mode != "seeds":
        replay_run, ws = _one_replay(
            store, run, contract, opts, root, None, resume[0] if resume else None, made
        )
        workspaces = [ws.root]
        notes += ws.notes
        overrides = {k: Tolerance(r, a) for k, (r, a) in opts.per_metric.items()}
        orig_points, replay_points = run_series(store, run), run_series(store, replay_run)
        if resume is not None:
            # The continuation starts after the checkpoint's step; points the replay logged at
            # or before it stay in, and show up as structural divergences (it did not resume).
            orig_points = {k: v for k, v in orig_points.items() if k[1] > resume[1]}
        # Timings and throughputs (train_runtime) measure the clock: beside the verdict.
        skipped = volatile_names(
            [k[0] for k in (*orig_points, *replay_points)], opts.timing_metrics
        )
        if skipped:
            settings["not_compared"] = skipped
            orig_points = {k: v for k, v in orig_points.items() if k[0] not in skipped}
            replay_points = {k: v for k, v in replay_points.items() if k[0] not in skipped}
        if opts.mode == "bitwise":
            series = compare_series(orig_points, replay_points, rtol=0.0, atol=0.0)
            bitwise_values = _bitwise_identical(orig_points, replay_points)
        else:
            series = compare_series(
                orig_points, replay_points, rtol=opts.rtol, atol=opts.atol, overrides=overrides
            )
            bitwise_values = True
        det = _determinism_drift(run, replay_run)
        if det:
            labels.append("different-determinism-settings")
            notes.append("determinism settings differ: " + "; ".join(det[:10]))
        files = compare_run_outputs(
            store, run, replay_run, opts, ws.root, resume[1] if resume else None
        )
        paths = (str(ws.run_dir), contract.cwd)
        stdout_row = _stdout_if_nothing_else(
            store, run, replay_run, opts, series, files, ws.root, paths, resume is not None
        )
        if stdout_row is not None:
            files.append(stdout_row)
        # "ignored": a captured log, compared only with --include-logs (as compare_trees has it)
        files_ok = all(f["status"] in ("identical", "close", "ignored") for f in files)
        if opts.mode == "bitwise":
            files_ok = all(f["status"] in ("identical", "ignored") for f in files)
        same_exit = (run.status, run.exit_code, run.signal) == (
            replay_run.status,
            replay_run.exit_code,
            replay_run.signal,
        )
        ok = series.ok and bitwise_values and files_ok and same_exit
        compared = compared_counts(series.compared, files)
        settings["compared"] = compared
        if ok and compared_nothing_but_exit(compared):
            labels.append("exit-status-only")
        summary = _summary(opts.mode, ok, series, files, run, replay_run, same_exit, compared)
        if not ok or opts.mode == "bitwise":  # both runs traced: where they first diverged
            from .localize import localize_runs

            loc = localize_runs(store, run, replay_run)
            if loc is None and not ok and opts.localize:  # no trace: two traced passes
                from .localize_resume import localize_from_checkpoint

                loc = localize_from_checkpoint(store, run, contract, opts, series, root, made)
            if loc is not None and not ok:
                settings["localization"] = loc
                doc = f" (what to do: {loc['doc']})" if loc.get("found") else ""
                summary += f"; localized: {loc['line']}{doc}"
            elif loc is not None and loc["found"]:  # below what the compared values show
                settings["localization"] = loc
                labels.append("traces-differ")
                notes.append(f"the traces differ although the compared values match: {loc['line']}")
        if skipped:
            summary += "; " + not_compared_text(skipped)
        if not same_exit:
            from .missing_reads import lacking, lacking_text

            gone = lacking(store, run, ws.run_dir)
            summary += f"; {lacking_text(gone)}" if gone else ""
        verdict = Verdict(
            original=run.run_id,
            replays=[replay_run.run_id],
            mode=opts.mode,
            outcome="reproduced" if ok else "not-reproduced",
            summary=summary,
            created=datetime.now(UTC),
            exit_status={
                "original": [run.status, run.exit_code, run.signal],
                "replay": [replay_run.status, replay_run.exit_code, replay_run.signal],
            },
            metrics=series.to_json(),
            files=files,
            environment_drift=drift,
            labels=labels,
            settings=settings,
            notes=notes,
        )
    else:
        verdict, workspaces = _seeds(store, run, contract, opts, drift, labels, settings, made)
    oid = store.put_json(verdict.to_json())
    store.set_ref(
        f"verdicts/{run.run_id}/{verdict.replays[0]}", oid, op="verdict", outcome=verdict.outcome
    )
    from ..index import Index

    with Index(store) as index:
        index.sync()
    if not opts.keep_workspace:
        for path in dict.fromkeys([*workspaces, *made]):  # the --localize passes' too
            shutil.rmtree(path, ignore_errors=True)
    return ReplayOutcome(verdict, oid, workspaces)


def _stdout_if_nothing_else(
    store: Store,
    run: Run,
    replay_run: Run,
    opts: ReplayOptions,
    series: Any,
    files: list[dict[str, Any]],
    workdir: Path,
    paths: tuple[str, str],
    resumed: bool,
) -> dict[str, Any] | None:
    """The ``<stdout>`` row of a program whose result is its printed text (a sampler, an
    evaluation script): with no metric value and no output file to compare, the captured
    stdout is compared line by line. The recorder tees only the program's own stdout into it
    (ledger's messages go to stderr, ``--jobs`` prefixes only to the terminal). None when
    something else was compared, when ``--include-logs`` already compares it, or when the
    original printed nothing (an empty text proves nothing either), and for a replay resumed
    from a checkpoint: it prints only what follows the checkpoint, and which of the original's
    lines came after it is not known."""
    from .compare_outputs import compare_stdout

    if resumed or opts.include_logs or series.compared or series.first_structural is not None:
        return None
    if any(is_compared_file(f) for f in files):
        return None
    if run.stdout is None or replay_run.stdout is None:
        return None
    if run.stdout == EMPTY_OID and replay_run.stdout == EMPTY_OID:
        return None
    return compare_stdout(store, run, replay_run, workdir, paths)


def _bitwise_identical(a: dict[tuple[str, int], float], b: dict[tuple[str, int], float]) -> bool:
    """compare_series with zero tolerance still equates -0.0 and 0.0: check the bytes too."""
    from ..stats import bitwise_equal

    return all(bitwise_equal(v, b[k]) for k, v in a.items() if k in b)


def _summary(
    mode: str,
    ok: bool,
    series: Any,
    files: list[dict[str, Any]],
    run: Run,
    replay_run: Run,
    same_exit: bool,
    compared: dict[str, Any],
) -> str:
    exit_text = f"exit status {run.status} ({run.exit_code})"
    if ok and compared_nothing_but_exit(compared):
        stderr = (
            "; its stderr was not compared (it may carry timings and progress): "
            "--include-logs compares it"
            if run.stderr not in (None, EMPTY_OID)
            else ""
        )
        return (
            f"reproduced ({mode}), exit status only: {exit_text} reproduced; nothing else could "
            f"be compared (no metrics, no output files, and nothing printed to stdout){stderr}"
        )
    if ok:
        return f"reproduced ({mode}): compared {compared_text(compared)}; all match, {exit_text}"
    parts = []
    if not same_exit:
        parts.append(
            f"exit status differs: original {run.status} ({run.exit_code}), replay "
            f"{replay_run.status} ({replay_run.exit_code})"
        )
    fd = series.first_divergence
    if fd is not None:
        parts.append(
            f"first divergence at {fd.metric} step {fd.step}: original {fd.original!r}, "
            f"replay {fd.replay!r} (abs {fd.abs_diff:.3g}, rel {fd.rel_diff:.3g}); "
            f"{series.mismatches} of {series.compared} values differ"
        )
    if series.first_structural is not None:
        s = series.first_structural
        parts.append(f"metric {s.metric} step {s.step} only in the {s.present_in}")
    bad = [f for f in files if f["status"] not in ("identical", "close", "ignored")]
    bad_files = [f for f in bad if is_compared_file(f)]
    if bad_files:
        parts.append(f"{len(bad_files)} output file(s) differ, first {_file_detail(bad_files[0])}")
    for log in (f for f in bad if not is_compared_file(f)):  # <stdout>, <stderr>
        parts.append(_file_detail(log, log["path"].strip("<>")))
    if not parts:
        parts.append("values equal but not bitwise identical (e.g. -0.0 vs 0.0)")
    return f"not reproduced ({mode}; compared {compared_text(compared)}): " + "; ".join(parts)


def _file_detail(row: dict[str, Any], name: str | None = None) -> str:
    """``out/a.csv: line 2 differs: original 'a', replay 'b'``, not a dict's repr."""
    detail = row.get("detail")
    if isinstance(detail, dict):
        text = str(detail.get("description") or detail.get("kind") or row["status"])
        values = [detail.get("original"), detail.get("replay")]
        # A value difference's description already reads "key: a != b": not twice.
        if any(v is not None for v in values) and not all(str(v) in text for v in values):
            text += f": original {values[0]}, replay {values[1]}"
    else:
        text = str(detail or row["status"])
    return f"{name or row['path']}: {text}"


def _seeds(
    store: Store,
    run: Run,
    contract: Contract,
    opts: ReplayOptions,
    drift: list[dict[str, Any]],
    labels: list[str],
    settings: dict[str, Any],
    made: list[Path],
) -> tuple[Verdict, list[Path]]:
    import secrets

    from ..stats import compare_seeds
    from .seed_values import seed_roots

    metric = opts.metric or _main_metric(run)
    original_value = _value_of(run, metric)
    group = [original_value]
    group_ids = [run.run_id]
    for other in opts.original_group:  # --against: checked before any seed runs, too
        _, other_run = load_run(store, other)
        if other_run.run_id not in group_ids:
            group.append(_value_of(other_run, metric, flag="--against"))
            group_ids.append(other_run.run_id)
    # Each seed is a full training run: refuse before the first one when the original shows
    # that the seed cannot reach the program, and stop early when two seeds agree exactly.
    refuse_unvarying_seed(store, run, contract.argv, opts.seed_arg)
    boot_seed = opts.bootstrap_seed if opts.bootstrap_seed is not None else secrets.randbits(63)
    own_root = contract.seed_root if contract.seed_root is not None else _recorded_root(run)
    roots = seed_roots(opts, store, run, contract.argv, own_root)  # --seed-values, else drawn
    given_seeds = [r % (2**31) for r in roots] if opts.seed_arg else roots
    finished: list[tuple[Run, int, float | None]] = []

    def probe(index: int, replay_run: Run) -> None:
        # Each replay as it ends, in the order they end, on this thread (the thread pool's
        # wait loop or the seed jobs' poll loop): one at a time.
        finished.append((replay_run, given_seeds[index], final_value(replay_run, metric)))
        check_first_replays(store, finished, metric, opts.seed_arg, opts.seeds)

    from .executors import DevicePool, seed_output

    devices = DevicePool(opts.executor)

    def go(i: int) -> tuple[Run, Workspace]:
        # A seed passed on the command line must fit the script's int parsing; otherwise the
        # root goes through LEDGER_SEED_ROOT to ledger.seed().
        # --devices: this seed's own GPUs; --jobs > 1: its lines prefixed, never interleaved
        with devices.slot() as gpus, seed_output(i, opts):
            if opts.seed_arg:
                seed = roots[i] % (2**31)
                done = _one_replay(store, run, contract, opts, None, seed, None, made, gpus)
            else:
                seed = roots[i]
                done = _one_replay(store, run, contract, opts, roots[i], None, None, made, gpus)
        if opts.on_seed is not None:
            opts.on_seed(i, seed, done[0], final_value(done[0], metric))
        return done

    results: list[tuple[Run, Any]] = []
    replayed = roots  # the roots of the replays in results
    job_notes: list[str] = []
    if opts.executor is not None and opts.executor.name != "local":
        from .executors import run_seed_jobs

        plan = [(r % (2**31), None, r % (2**31)) if opts.seed_arg else (r, r, None) for r in roots]
        jobs = run_seed_jobs(store, run, opts, plan, metric, opts.on_seed, probe)
        results = list(jobs.replays())
        replayed = [roots[o.index] for o in jobs.completed]
        job_notes = jobs.notes()
        settings = dict(settings, seed_jobs=[o.to_json() for o in jobs.outcomes])
        if jobs.folder is not None:
            job_notes.append(f"the seed jobs' logs are kept in {jobs.folder}")
    else:
        results = _seeds_in_threads(opts, go, probe)
    replays = [r for r, _ in results]
    values = [final_value(r, metric) for r in replays]
    finite = [v for v in values if v is not None]
    if len(finite) < 2:
        ends = ", ".join(f"{r.status} ({r.exit_code})" for r in replays[:5])
        raise ReplayError(
            f"only {len(finite)} of {len(replays)} replays produced metric {metric!r} "
            f"(they ended: {ends})",
            hint=f"`ledger log --stderr {replays[0].run_id}` shows what the first one printed",
        )
    given = [root % (2**31) for root in replayed] if opts.seed_arg else replayed
    check_seed_effect(store, replays, given, values, metric, opts.seed_arg)
    cmp = compare_seeds(group, finite, margin=opts.margin, seed=boot_seed)
    notes: list[str] = list(dict.fromkeys(n for _, ws in results for n in ws.notes))
    notes += job_notes
    if cmp.single_run is not None:
        outcome, summary = _single_original(cmp.single_run, metric, original_value)
        notes.append(
            "the original group is a single run, exchangeable with the replays if it "
            "reproduces: the verdict rests on its exact rank among them (two-sided), with the "
            "prediction interval beside it; pass --against RUN for more original seeds"
        )
    else:
        if cmp.tost is None:  # a group of several original runs always has its test
            raise TypeError("the comparison of two groups came without its equivalence test")
        t = cmp.tost
        outcome = {"equivalent": "reproduced", "different": "not-reproduced"}.get(
            str(t.verdict), "inconclusive"
        )
        summary = (
            f"seeds: Welch TOST on {metric}, {len(group)} original vs {len(finite)} replayed "
            f"seeds, margin {t.margin:g} ({t.margin_source}): {t.verdict}"
            + (f"; about {t.seeds_needed} seeds per group needed" if t.seeds_needed else "")
        )
    # A seed whose replay did not end as the original did (another exit status, a signal, or
    # no value of the metric) is evidence against reproduction, not a seed to leave out: the
    # statistics above rest only on the seeds that gave a value, which would hide it.
    unlike = _unlike_original(run, replays, given, values, metric)
    if unlike:
        outcome = "not-reproduced"
        notes = [*unlike, *notes]
        summary = (
            f"{len(unlike)} of {len(replays)} replayed seeds did not end as the original did "
            f"({run.status}, exit {run.exit_code}, {metric} logged): not reproduced; the "
            f"{len(finite)} with a value: {summary}"
        )
    if "seed_jobs" in settings:
        summary = f"{len(results)} of {opts.seeds} seed jobs completed; {summary}"
    settings = dict(
        settings,
        metric=metric,
        seeds=opts.seeds,
        roots=roots,
        seed_values=opts.seed_values,  # None: the roots were drawn at random
        bootstrap_seed=boot_seed,
        margin=opts.margin,
        original_group=group_ids,
    )
    verdict = Verdict(
        original=run.run_id,
        replays=[r.run_id for r in replays],
        mode="seeds",
        outcome=outcome,  # type: ignore[arg-type]
        summary=summary,
        created=datetime.now(UTC),
        seeds=cmp.to_json(),
        environment_drift=drift,
        labels=labels,
        settings=settings,
        notes=notes,
    )
    # Seed jobs remove their own workspaces: the engine is given them only to list them as kept.
    as_jobs = "seed_jobs" in settings
    return verdict, [ws.root for _, ws in results] if opts.keep_workspace or not as_jobs else []


def _unlike_original(
    run: Run, replays: list[Run], given: list[int], values: list[float | None], metric: str
) -> list[str]:
    """A note for each replayed seed that ended otherwise than the original: its exit status
    or signal differs, or it gave no value of ``metric`` where the original did."""
    out = []
    ended = (run.status, run.exit_code, run.signal)
    for replay, seed, value in zip(replays, given, values, strict=False):
        same = (replay.status, replay.exit_code, replay.signal) == ended
        if same and value is not None:
            continue
        got = f"no value of {metric}" if value is None else f"{metric} = {value:g}"
        out.append(
            f"seed {seed}: replay {replay.run_id} ended {replay.status} (exit "
            f"{replay.exit_code}{f', signal {replay.signal}' if replay.signal else ''}) with "
            f"{got}; the original ended {run.status} (exit {run.exit_code}) with {metric} logged"
        )
    return out


def _single_original(p: Any, metric: str, value: float) -> tuple[str, str]:
    """(outcome, summary) for one original run and n replayed seeds: the n + 1 runs are
    exchangeable if it reproduces, so its rank is exact evidence and needs no distribution.
    Not reproduced only when the two-sided rank p-value is at most 5% (39 replays at least);
    an original outside the prediction interval that its rank cannot condemn is inconclusive,
    never "not reproduced" for what happens one time in six (docs/explanation/statistics.md)."""
    r = p.rank
    lo, hi = p.prediction_interval
    where = (
        f"{'inside' if p.inside else 'outside'} the {p.level:.0%} prediction interval "
        f"[{lo:.6g}, {hi:.6g}]"
    )
    head = f"seeds: the original {metric} = {value:g} is {r.describe()}; it falls {where}"
    if r.significant:
        return "not-reproduced", (
            f"{head}. A run of the same distribution ranks this far out at most "
            f"{r.p_two_sided_text} of the time (two-sided): not reproduced"
        )
    if not p.inside:
        return "inconclusive", (
            f"{head}. Its rank is what a run of the same distribution gets "
            f"{r.p_two_sided_text} of the time (two-sided), so it is no evidence against it; "
            f"the interval assumes normal spread. Inconclusive: from {r.replays_needed} "
            f"replayed seeds its rank alone can show a difference at {r.alpha:.0%}"
        )
    return "reproduced", head


def _seeds_in_threads(
    opts: ReplayOptions,
    go: Callable[[int], tuple[Run, Workspace]],
    probe: Callable[[int, Run], None],
) -> list[tuple[Run, Any]]:
    """Run the seeds, at most ``opts.jobs`` at a time, each started only when a slot frees:
    ``probe`` sees every replay as it ends and may stop the rest by raising."""
    results: dict[int, tuple[Run, Any]] = {}
    todo = iter(range(opts.seeds))
    with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        running = {pool.submit(go, i): i for i in islice(todo, opts.jobs)}
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    i = running.pop(f)
                    results[i] = f.result()
                    probe(i, results[i][0])
                for i in islice(todo, len(done)):
                    running[pool.submit(go, i)] = i
            return [results[i] for i in sorted(results)]
        except BaseException:
            # Ctrl-C reaches only this thread, and a failed seed (or the probe) ends the
            # replay: pass the signal on to the seeds running (their runs are sealed as
            # interrupted), so the pool does not wait for them to finish; none is started.
            from ..run.execute import interrupt_running

            # Again until all are done: a seed still building its workspace starts later.
            while not all(f.done() for f in running):
                interrupt_running(signal.SIGINT)
                wait(running, timeout=0.2)
            raise


def _value_of(run: Run, metric: str, *, flag: str = "--metric") -> float:
    """The last finite value of ``metric`` in ``run``; a UsageError that lists the run's
    metrics (and the nearest name) when it has none of that name: a typo costs no replay."""
    import difflib

    value = final_value(run, metric)
    if value is not None:
        return value
    names = sorted({m.name for m in run.metrics})
    if metric in names:
        raise UsageError(
            f"run {run.run_id} has no finite value of metric {metric!r}",
            hint="choose the main metric with --metric NAME: its metrics are " + ", ".join(names),
        )
    near = difflib.get_close_matches(metric, names, n=1)
    shown = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
    head = (
        f"--metric {metric!r}: run {run.run_id}"
        if flag == "--metric"
        else f"{flag} {run.run_id}: it"
    )
    raise UsageError(
        f"{head} has no metric of that name; its metrics: {shown or 'none'}",
        hint=f"did you mean --metric {near[0]}?" if near else "give one of them with --metric",
    )


def _main_metric(run: Run) -> str:
    names = [m.name for m in run.metrics if m.rank is None or m.source == "combined"]
    if not names:
        raise UsageError(f"run {run.run_id} recorded no metrics", hint="give --metric NAME")
    for preferred in ("accuracy", "acc", "val_acc", "loss", "val_loss"):
        if preferred in names:
            return preferred
    return names[0]
