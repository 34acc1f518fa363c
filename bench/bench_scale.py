"""Many runs in one ledger: ``ledger ls``, ``ledger show``, ``ls --where``, ``ls --search``,
``reindex``, the index size and the ``ledger ui`` runs table, against MLflow's ``search_runs``
on a file store holding the same runs when MLflow is importable.

The runs are written through the store API (series, config and run records, refs and log lines
as the recorder writes them), not recorded: recording 100,000 commands would measure the
recorder. While this fixture is written ``os.fsync`` is a no-op and one ``os.sync()`` follows
(durability is not what is measured; 2,000 runs took 45 s with an fsync per file). The result
is an ordinary ledger: ``ledger verify`` accepts it and ``ledger reindex`` rebuilds its index
(tests/test_bench_scale.py checks both). ``BENCH_RUNS`` sets how many runs (default 100,000;
``--quick``: 2,000). Each ledger figure is the wall time of a fresh ``python -m ledger``
process, start-up included, with its bytecode cached as an installed package has it
(``bench.bytecode_env``). ``LEDGER_BENCH_BASELINE=REV`` adds each command at REV (before),
measured in the same run on a mirror of the ledger (its objects, refs and log linked, its own
index, since another version may fold the index otherwise).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench import Row, baseline_checkout, bytecode_env, in_turn, median_time

NAME = "scale: many runs in one ledger"
_REPO = Path(__file__).resolve().parent.parent
_PAGE = 50  # ``ledger ls``'s default --limit, and the web view's page


@contextlib.contextmanager
def unsynced() -> Iterator[None]:
    """``os.fsync`` as a no-op while a fixture is written, then one ``os.sync()``."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real
        os.sync()


def _started(i: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)


def _run_id(i: int) -> str:
    # Sorted like real ids (start time first); the tail is unique, as ``secrets`` would make it.
    return _started(i).strftime("%Y%m%dT%H%M%S.%fZ") + f"-{(i * 2654435761) % 2**32:08x}"


def params(i: int) -> dict[str, float | int]:
    return {"lr": 10.0 ** -(i % 5), "bs": 32 * (1 + i % 4)}


def loss(i: int, step: int) -> float:
    return 1.0 / (step + 1 + i % 7)


def seed_run(root: Path) -> None:
    """Record one real run (``python -c pass`` in a new git repository) into the ledger at
    ``root``: its contract, environment and logs are what every generated run points at."""
    env = {**os.environ, "PYTHONPATH": str(_REPO), "LEDGER_DIR": str(root)}
    repo = root.parent / "seed-repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "seed"], cwd=repo, check=True)
    subprocess.run(
        [sys.executable, "-m", "ledger", "record", "--", sys.executable, "-c", "pass"],
        cwd=repo,
        check=True,
        capture_output=True,
        env=env,
    )


def generate(store: Any, n: int, start: int = 0, progress: bool = False) -> list[str]:
    """Write runs ``start .. start+n-1`` into ``store``, each a copy of the ledger's first run
    (``seed_run``) with its own id, name, tags, times, config and ``loss`` series, sealed as
    ``ledger record`` seals a run. Returns their ids."""
    from datetime import timedelta

    from ledger.records.config import ConfigCapture
    from ledger.records.metrics import build_series, summarize
    from ledger.records.run import Run

    first = store.refs.names("runs/")[0]
    template = store.get_json(store.refs.get(first))
    ids = []
    t0 = time.perf_counter()
    for i in range(start, start + n):
        run_id, started = _run_id(i), _started(i)
        series = build_series("loss", "api", [(s, None, float(s), loss(i, s)) for s in range(5)])
        config = ConfigCapture(argv=["python", "train.py"], resolved=params(i))
        run = Run.model_validate(
            template
            | {
                "run_id": run_id,
                "name": f"exp{i % 50}",
                "tags": {"sweep": str(i % 10)},
                "started": started,
                "ended": started + timedelta(seconds=60),
                "wall_seconds": 60.0,
                "resolved_config": store.put_json(config.to_json()),
                "metrics": [summarize(series, store.put_json(series.to_json()))],
            }
        )
        store.set_ref(
            f"runs/{run_id}", store.put_json(run.to_json()), op="seal", status="succeeded"
        )
        ids.append(run_id)
        done = i - start + 1
        if progress and done % 10_000 == 0:
            rate = done / (time.perf_counter() - t0)
            print(f"[bench] scale: {done:,} runs written ({rate:.0f}/s)", file=sys.stderr)
    return ids


_PYCACHE = Path(tempfile.gettempdir()) / "ledger-bench-scale-pycache"


def _env(code: Path = _REPO) -> dict[str, str]:
    """The environment of a ``ledger`` child running the package in ``code``."""
    return bytecode_env({**os.environ, "PYTHONPATH": str(code)}, _PYCACHE)


def _ledger(root: Path, *args: str, code: Path = _REPO) -> Callable[[], None]:
    env = _env(code)

    def go() -> None:
        subprocess.run(
            [sys.executable, "-m", "ledger", "--ledger", str(root), *args],
            check=True,
            capture_output=True,
            env=env,
            # Outside this checkout: `python -m` puts the working directory first on sys.path,
            # which would run this checkout's ledger whatever PYTHONPATH says.
            cwd=root.parent,
        )

    return go


def _clocked(
    fn: Callable[[], None], setup: Callable[[], None] | None = None
) -> Callable[[], tuple[float, float]]:
    """One run of ``fn`` after ``setup`` (untimed): (wall seconds, CPU seconds its child
    process used). On a loaded machine the wall time waits for the cores; the CPU time is
    the work."""
    import resource

    def go() -> tuple[float, float]:
        if setup is not None:
            setup()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        fn()
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    return go


def _ui_server(root: Path) -> tuple[subprocess.Popen[str], str]:
    env = _env()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", "--ledger", str(root), "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=root.parent,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "ledger ui: http://localhost:PORT/ (Ctrl-C to stop)"
    url = line.split()[2].replace("localhost", "127.0.0.1")
    return proc, url


def _get(url: str) -> Callable[[], None]:
    def go() -> None:
        with urllib.request.urlopen(url, timeout=600) as r:
            body = r.read()
        if b"<table" not in body:
            raise RuntimeError(f"{url} did not answer with the runs table")

    return go


def _mlflow_store(tmp: Path, n: int) -> tuple[str, str, float] | None:
    """The same runs in an MLflow file store, written with its store API and one batch a run:
    (tracking uri, experiment id, seconds taken to write them), or None when MLflow is not
    installed."""
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # maintenance mode in MLflow 3
    try:
        from mlflow.entities import Metric, Param, RunStatus, RunTag
        from mlflow.store.tracking.file_store import FileStore
    except ImportError:
        return None
    root = tmp / "mlruns"
    fs = FileStore(str(root))
    done = tmp / "mlruns.done"
    if done.is_file():  # kept from an earlier run (BENCH_SCALE_DIR): its id and write time
        kept_exp, kept_took = done.read_text().split()
        return root.as_uri(), kept_exp, float(kept_took)
    t = time.perf_counter()
    exp = str(fs.create_experiment("bench"))
    finished = RunStatus.to_string(RunStatus.FINISHED)
    t0 = 1_767_225_600_000  # 2026-01-01, in ms
    for i in range(n):
        start = t0 + i * 1000
        r = fs.create_run(exp, "bench", start, [RunTag("sweep", str(i % 10))], f"exp{i % 50}")
        fs.log_batch(
            r.info.run_id,
            [Metric("loss", loss(i, s), start + s, s) for s in range(5)],
            [Param(k, str(v)) for k, v in params(i).items()],
            [],
        )
        fs.update_run_info(r.info.run_id, finished, start + 60_000, None)
    took = time.perf_counter() - t
    done.write_text(f"{exp} {took}\n")
    return root.as_uri(), exp, took


def run(quick: bool) -> list[Row]:
    """``BENCH_RUNS``: the numbers of runs, comma-separated (a ledger is written for each);
    ``BENCH_MLFLOW_MAX``: the largest of them MLflow is compared at (writing 100,000 runs
    into its file store takes long); ``BENCH_SCALE_DIR``: keep the fixtures there and use
    them again."""
    sizes = [int(x) for x in os.environ.get("BENCH_RUNS", "2000" if quick else "100000").split(",")]
    cap = int(os.environ.get("BENCH_MLFLOW_MAX", str(max(sizes))))
    rows: list[Row] = []
    load = os.getloadavg()[0]
    base = baseline_checkout(Path(tempfile.mkdtemp(prefix="ledger-bench-scale-")) / "baseline")
    for n in sizes:
        for row in _size(n, n <= cap, base):
            row.what = f"{n:,} runs: {row.what.replace(f', {n:,} runs', '')}"
            rows.append(row)
    rows[-1].note = (
        f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on "
        f"{os.cpu_count()} cores: wall times include waiting for a core"
    )
    return rows


def _mirror(root: Path, dest: Path) -> Path:
    """A ledger at ``dest`` that is ``root`` but for its index: each folder is a link, each
    file (``config.json``) a copy, since ledger reads only regular files there."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    for entry in root.iterdir():
        link = dest / entry.name
        if entry.name.startswith("index.sqlite") or link.is_symlink() or link.exists():
            continue
        if entry.is_dir():
            link.symlink_to(entry)
        else:
            shutil.copyfile(entry, link)
    return dest


def _size(n: int, with_mlflow: bool, base: tuple[str, Path] | None = None) -> list[Row]:
    from ledger.store import Store

    big = n >= 100_000
    reps = 4  # even: with a baseline, each side runs first as often as the other
    rows: list[Row] = []
    keep = os.environ.get("BENCH_SCALE_DIR")
    with contextlib.ExitStack() as stack:
        if keep:  # the fixture is kept there and used again by a later run with the same N
            tmp = str(Path(keep) / f"n{n}")
            Path(tmp).mkdir(parents=True, exist_ok=True)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
        root = Path(tmp) / ".ledger"
        marker = Path(tmp) / "ledger.done"
        made = marker.is_file()
        store = Store.init(root)
        if not made:
            seed_run(root)
        t = time.perf_counter()
        with unsynced():
            ids = [_run_id(i) for i in range(n)] if made else generate(store, n, progress=True)
        took = float(marker.read_text().split()[1]) if made else time.perf_counter() - t
        marker.write_text(f"{n} {took}\n")
        rows.append(
            Row(
                NAME,
                f"write {n:,} runs through the store API",
                took,
                "s",
                note="fixtures kept in BENCH_SCALE_DIR are written once; their write time is "
                "the first run's"
                if keep
                else "",
            )
        )
        before_root = None
        if base is not None:
            before_root = _mirror(root, Path(tmp) / f"at-{base[0]}" / ".ledger")

        def in_turn_medians(
            args: list[str],
            count: int,
            setup: Callable[[], None] | None = None,
            baseline: bool = True,
        ) -> dict[str, tuple[float, float]]:
            """Median (wall, CPU) seconds of ``ledger ARGS`` over ``count`` runs, and of the
            same at the baseline revision on the mirror when measured: the two in turn, each
            after a sync (``bench.in_turn``). Before, the baseline's runs all came after
            these: after a reindex's writes, on a spent disk (bench/__init__.py)."""
            sides = {"now": _clocked(_ledger(root, *args), setup)}
            if base is not None and before_root is not None and baseline:
                sides["before"] = _clocked(_ledger(before_root, *args, code=base[1]), setup)
            got: dict[str, list[tuple[float, float]]] = {k: [] for k in sides}
            for r in range(count):
                for k, v in in_turn(r, sides).items():
                    got[k].append(v)
            return {
                k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                for k, v in got.items()
            }

        _ledger(root, "--version")()  # warm the bytecode cache
        if base is not None and before_root is not None:
            _ledger(before_root, "--version", code=base[1])()
        fig = in_turn_medians(["--version"], reps)
        version, version_cpu = fig["now"]
        rows.append(Row(NAME, "ledger --version (start-up)", version, "s"))
        rows.append(Row(NAME, "ledger --version, CPU time (user + system)", version_cpu, "s"))
        if base is not None:
            before, before_cpu = fig["before"]
            rows.append(
                Row(
                    NAME,
                    f"ledger --version at {base[0]} (before)",
                    before,
                    "s",
                    "ledger --version",
                    before / version,
                )
            )
            rows.append(
                Row(
                    NAME,
                    f"ledger --version at {base[0]} (before), CPU time",
                    before_cpu,
                    "s",
                    "ledger --version, CPU time",
                    before_cpu / version_cpu,
                )
            )
        # At 100,000 runs a reindex takes long: once, or once each way round with a baseline.
        folds = (1 if base is None else 2) if n > 10_000 else reps
        fig = in_turn_medians(["reindex"], folds)
        reindex, reindex_cpu = fig["now"]
        size = sum(p.stat().st_size for p in root.glob("index.sqlite*"))
        rows.append(
            Row(
                NAME,
                f"ledger reindex, {n:,} runs",
                reindex,
                "s",
                target="≤ 20 s at 100,000 runs",
                passed=reindex <= 20.0 if big else None,
            )
        )
        rows.append(Row(NAME, f"ledger reindex, {n:,} runs, CPU time", reindex_cpu, "s"))
        _ledger(root, "ls")()  # warm the bytecode cache
        if base is not None and before_root is not None:
            took, took_cpu = fig["before"]
            rows.append(
                Row(
                    NAME,
                    f"ledger reindex, {n:,} runs, at {base[0]} (before)",
                    took,
                    "s",
                    "ledger reindex",
                    took / reindex,
                )
            )
            rows.append(
                Row(
                    NAME,
                    f"ledger reindex, {n:,} runs, at {base[0]} (before), CPU time",
                    took_cpu,
                    "s",
                    "ledger reindex, CPU time",
                    took_cpu / reindex_cpu,
                )
            )
            _ledger(before_root, "ls", code=base[1])()
        rows.append(
            Row(
                NAME,
                "index size",
                size / 2**20,
                "MiB",
                note=f"index: {size / n:.0f} bytes a run at {n:,} runs",
            )
        )

        def timed(
            what: str,
            args: list[str],
            target: float | None = None,
            setup: Callable[[], None] | None = None,
            baseline: bool = True,
        ) -> float:
            fig = in_turn_medians(args, reps, setup, baseline)
            value, cpu = fig["now"]
            goal = f"≤ {target} s at 100,000 runs" if target is not None else ""
            ok = value <= target if target is not None and big else None
            rows.append(Row(NAME, what, value, "s", "ledger --version", value / version, goal, ok))
            rows.append(
                Row(
                    NAME,
                    f"{what}, CPU time (user + system)",
                    cpu,
                    "s",
                    "ledger --version, CPU time",
                    cpu / version_cpu,
                    note="CPU time: of the `ledger` process, median of the same runs; it does "
                    "not wait for a core, so it is what a command costs on an idle machine",
                )
            )
            if base is not None and "before" in fig:
                was, was_cpu = fig["before"]
                rows.append(
                    Row(NAME, f"{what} at {base[0]} (before)", was, "s", "now", was / value)
                )
                rows.append(
                    Row(
                        NAME,
                        f"{what} at {base[0]} (before), CPU time",
                        was_cpu,
                        "s",
                        "now, CPU time",
                        was_cpu / cpu,
                        note="rows `at REV (before)`: ratio = before / now, the speed-up; the "
                        "two run in turn, each after a `sync` (the disk's write budget: "
                        "bench/__init__.py); with a baseline, each side's index catches up on "
                        "the runs the other's setup added as well",
                    )
                )
            return value

        ls = timed("ledger ls (default page)", ["ls"], 0.2)
        some = ids[n // 2]
        timed("ledger show RUN (an id)", ["show", some], 0.3)
        timed("ledger show NAME (newest run of 50 names)", ["show", "exp7"], 0.3)
        timed("ledger ls --where 'params.lr < 0.001'", ["ls", "-w", "params.lr < 0.001"])
        # Full-text search (ledger.index.search), new in this round: no baseline to run.
        timed("ledger ls --search 'exp7 sweep'", ["ls", "--search", "exp7 sweep"], baseline=False)
        # After the seed run and every run written so far (a kept fixture has more).
        extra = iter(range(len(store.refs.names("runs/")) - 1, 10**9))

        def one_more() -> None:
            with unsynced():
                generate(store, 1, start=next(extra))

        timed("ledger ls after one more run (the index catches up)", ["ls"], 0.2, setup=one_more)
        proc, url = _ui_server(root)
        try:
            t = time.perf_counter()
            _get(url)()
            first = time.perf_counter() - t
            page = median_time(_get(url), reps)
        finally:
            proc.terminate()
            proc.wait()
        rows.append(
            Row(NAME, "ledger ui: first GET of the runs table (imports included)", first, "s")
        )
        rows.append(
            Row(
                NAME,
                "ledger ui: GET of the runs table, first page",
                page,
                "s",
                "",
                None,
                "≤ 0.5 s at 100,000 runs",
                page <= 0.5 if big else None,
            )
        )
        if not with_mlflow:
            rows[-1].note = "mlflow: compared at the smaller sizes (BENCH_MLFLOW_MAX)"
            return rows
        ml = _mlflow_store(Path(tmp), n)
        if ml is None:
            rows[-1].note = "mlflow search_runs: not measured, mlflow is not installed"
            print("[bench] scale: mlflow is not installed; comparison skipped", file=sys.stderr)
            return rows
        import mlflow

        from ledger.run.find import list_runs

        uri, exp, ml_took = ml
        mlflow.set_tracking_uri(uri)
        rows.append(
            Row(NAME, f"mlflow: write {n:,} runs (FileStore API, one batch a run)", ml_took, "s")
        )
        inproc = median_time(lambda: list_runs(store, limit=_PAGE), reps)
        rows.append(Row(NAME, f"ledger list_runs, {_PAGE} runs (in process)", inproc, "s"))
        search = median_time(
            lambda: mlflow.search_runs([exp], max_results=_PAGE), 1 if big else reps
        )
        note = (
            f"mlflow {mlflow.__version__} file store; search_runs returns a pandas frame of the "
            f"newest {_PAGE} runs; ratio: mlflow time / ledger time"
        )
        rows.append(
            Row(
                NAME,
                f"mlflow search_runs, file store, {_PAGE} runs (in process)",
                search,
                "s",
                "ledger list_runs (in process)",
                search / inproc,
                note=note,
            )
        )
        rows.append(
            Row(
                NAME,
                "mlflow search_runs (in process) vs `ledger ls` (a whole process)",
                search,
                "s",
                "ledger ls",
                search / ls,
                note=note,
            )
        )
    return rows
