"""Running a module's mutants: a throw-away copy of the checkout, the coverage pass that is also
the baseline, each mutant against the tests that cover it (forked from a warm server, or a
plain ``python -m pytest``), until the budget runs out."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import REPO
from .cache import _load_json, _write_json
from .fork import (
    RUN_MARK,
    ForkServer,
    failed_tests,
    kill_marked,
    last_test,
    shared_modules,
    wait_run,
)
from .mutate import Mutant, _compiles, apply, mutants_of
from .report import _save
from .selection import (
    CoverMap,
    Spans,
    cover_key,
    coverage_env,
    hash_tests,
    hash_tree,
    limits_of,
    mutant_key,
    read_coverage,
    seconds_of,
    select,
)
from .targets import ALWAYS, EQUIVALENT, MODULES

# Start-up is most of a killed mutant's cost: leave out plugins no related test uses.
PYTEST_PLUGINS_OFF = ["-p", "no:cacheprovider", "-p", "no:hydra_pytest", "-p", "no:benchmark"]


def _copy_checkout(dest: Path) -> None:
    ignore = shutil.ignore_patterns(
        ".git", "__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache", "mutation-results", "site"
    )
    for entry in REPO.iterdir():
        if entry.name in {".git", "mutation-results", "site", ".venv"}:
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(entry, dest / entry.name)


def _pytest_env(copy: Path, env_extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Not the suite's cached rewrites (tests/conftest.py): a collection would write bytecode of
    # the mutated sources, which a restored source of the same size and second would reuse.
    env.pop("LEDGER_TEST_CACHE_REWRITES", None)
    env.update(env_extra or {})
    return env


def _pytest_args(copy: Path, args: list[str], options: Sequence[str] = ()) -> list[str]:
    """pytest's arguments for a run of ``args`` (node ids) against ``copy``, with ``options``
    (such as ``-p PLUGIN``) on the command line itself."""
    # Hundreds of node ids, or a few with long parameters (a 200 KB log line in a test id;
    # the kernel refuses any argument over 128 KiB): pytest reads them from a file (@file).
    # Only node ids go there: pytest loads `-p` plugins from the command line before it
    # reads the file, and ignores a `-p` inside it without a word (engine.py's 33 mapped
    # tests put the coverage pass's `-p mutation_contexts` there: no contexts, no items.json).
    if len(args) > 20 or sum(len(a) for a in args) > 32_000:
        listing = copy / ".mutation-tests"
        listing.write_text("\n".join(args) + "\n")
        args = [f"@{listing}"]
    # -q, not -v: under -v a forked child nested in a pytest run (tests/test_mutation_fork.py)
    # spent over 3 s printing its header, past that test's timeout. The output goes to a log
    # beside the copy; a kill keeps its end (_tail).
    return ["-x", "-q", *PYTEST_PLUGINS_OFF, *options, *args]


TAIL_LINES = 15


def _tail(log: Path) -> list[str]:
    """The last lines of a killing run's output, kept with its result: which test failed (or
    hung, for a timeout), so a kill that load or another cause made can be told apart."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    lines = [ln.rstrip()[:300] for ln in text.splitlines() if ln.strip()]
    return lines[-TAIL_LINES:]


_plain_runs = itertools.count()  # each plain run's own RUN_MARK value


def _pytest(
    copy: Path,
    args: list[str],
    timeout: float,
    env_extra: dict[str, str] | None = None,
    log: Path | None = None,
    options: Sequence[str] = (),
) -> tuple[str, float]:
    """Run the tests against the copy; the whole process group is stopped whatever happens.
    ``log``: where pytest's output goes (a baseline's, to say why it failed); else nowhere.
    ``options``: pytest's own, kept on its command line (``_pytest_args``)."""
    mark = f"plain-{os.getpid()}-{next(_plain_runs)}"
    env = {**_pytest_env(copy, env_extra), RUN_MARK: mark}
    t0 = time.monotonic()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "w") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *_pytest_args(copy, args, options)],
            cwd=copy,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log is not None and not isinstance(out, int):
            out.close()
    _running.add(proc.pid)
    outcome = "killed-timeout"
    try:
        stopped = wait_run(proc.pid, max(timeout, 1.0), lambda s: _exited(proc, s))
        if stopped is None:
            outcome = "survived" if proc.returncode == 0 else "killed"
        elif stopped == "starved":
            outcome = "starved"
    finally:
        # Also reaps what the tests left behind in the group (a hung child of a mutant).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_marked(mark)  # and what they started in sessions of their own
        _running.discard(proc.pid)
    return outcome, time.monotonic() - t0


def _exited(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


# What a forked run's exit code says; any other code (a failure of the fork server's own
# harness, "no tests", a usage error) is not trusted as a kill: the mutant is run again plainly.
_FORK_OUTCOMES = {0: "survived", 1: "killed", 2: "killed", 3: "killed"}


def _forked_pytest(
    server: ForkServer,
    copy: Path,
    args: list[str],
    timeout: float,
    log: Path | None = None,
    failed: Path | None = None,
    limits: dict[str, float] | None = None,
    progress: Path | None = None,
) -> tuple[str, float] | None:
    """Run the tests in a child forked from ``server``; None when that run cannot be trusted
    (the caller runs them plainly). ``log``: where pytest's output goes; ``failed``: where the
    node ids of the tests that fail are listed; ``limits``: the time each test may have, by
    node id (a test past its limit stops the run as its timeout does; the test a run was in
    when it stopped is the last line of ``progress``, by default :func:`progress_of`)."""
    done = server.run(
        _pytest_args(copy, args),
        {},
        max(timeout, 1.0),
        _running,
        log,
        failed,
        progress_of(copy) if progress is None else progress,
        limits,
    )
    if done is None:
        return None
    rc, seconds, stopped = done
    if stopped == "starved":
        return "starved", seconds
    if stopped is not None:
        return "killed-timeout", seconds
    if rc < 0:  # a signal: a crash the mutant caused, as in a plain run
        return "killed", seconds
    outcome = _FORK_OUTCOMES.get(rc)
    return None if outcome is None else (outcome, seconds)


# The process groups of the test runs in flight, stopped when the run itself is stopped.
_running: set[int] = set()


def _stop_running() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@dataclass
class Options:
    select: bool = True  # per-mutant test selection by coverage (False: --no-select)
    cache: bool = True  # reuse results whose key is unchanged (False: --no-cache)
    recheck: bool = False  # rerun cached survivors (after new tests)
    deadline: float = float("inf")  # time.monotonic() past which no mutant starts (--budget)
    jobs: int = 1  # mutants run at once, each in its own copy of the checkout (--jobs)
    tests: list[str] | None = None  # instead of the mapped tests (--tests)
    fork: bool = True  # run each mutant's tests in a child of a warm fork server (--no-fork)
    lines: tuple[int, int] | None = None  # only the mutants on these source lines (--lines)

    def wants(self, m: Mutant) -> bool:
        """Whether ``m`` is on the lines asked for (every mutant when none are)."""
        return self.lines is None or self.lines[0] <= m.line <= self.lines[1]


class _Copy:
    """The throw-away checkout, made on first use (a fully cached module never needs one)."""

    def __init__(self, tmp: Path, made: Callable[[Path], None] | None = None) -> None:
        self.tmp = tmp
        self._path: Path | None = None
        self._made = made  # called with the copy's path once it is made

    @property
    def path(self) -> Path:
        if self._path is None:
            path = self.tmp / "copy"
            path.mkdir()
            _copy_checkout(path)
            if self._made is not None:
                self._made(path)
            self._path = path
        return self._path


def _cover(copy: _Copy, module: str, tests: list[str], log: Path) -> CoverMap | None:
    """The coverage pass, which is also the baseline: None when the tests fail unmutated
    (pytest's output in ``log``)."""
    work = copy.tmp / "cover"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = coverage_env(work, copy.path, module)
    outcome, seconds = _pytest(
        copy.path, tests, timeout=3600, env_extra=env, log=log, options=["-p", "mutation_contexts"]
    )
    if outcome != "survived":
        return None
    return read_coverage(work, module, round(seconds, 1))


def run_module(module: str, *, out_dir: Path, opts: Options) -> dict[str, Any]:
    """Run the mutants of ``module`` whose result is not cached, each against the tests that
    cover it (or all mapped tests without selection), until the deadline; write the results."""
    mapped = opts.tests or MODULES[module]
    tests = [t for t in mapped if (REPO / t.split("::")[0]).is_file()]
    original = (REPO / module).read_text()
    mutants = [m for m in mutants_of(module) if _compiles(apply(original, m), module)]
    name = module.replace("/", ".") + ".json"
    saved_path, cache_path = out_dir / name, out_dir / "cache" / name
    baseline_log = out_dir / name.replace(".json", ".baseline.log")
    cache = _load_json(cache_path) if opts.cache else {}
    outcomes: dict[str, dict[str, Any]] = cache.get("mutants", {})
    if opts.recheck:
        outcomes = {k: v for k, v in outcomes.items() if v["outcome"] != "survived"}
    spans = Spans.of(original)
    digests: dict[tuple[str, ...], str] = {}
    # Where the tests are hashed from: the checkout until the run's copy of it is made, the
    # copy after (what the mutants run against). A subset's digest is taken after the
    # coverage pass, minutes later: a test file edited meanwhile in the checkout was hashed
    # as edited but run as copied, and its results cached under the wrong key.
    hashed_from = [REPO]

    def digest(ids: list[str]) -> str:
        files = tuple(sorted({t.split("::")[0] for t in ids}))
        if files not in digests:
            digests[files] = hash_tests(hashed_from[0], list(files))
        return digests[files]

    all_digest = digest(tests)

    def copied(path: Path) -> None:
        """The copy is made: its tests must be the ones hashed at the start."""
        if hash_tests(path, tests) != all_digest:
            raise SystemExit(
                f"mutation: the tests mapped for {module} changed between the start of this "
                "run and its copy of the checkout; run it again"
            )
        hashed_from[0] = path

    ckey = cover_key(original, tests, all_digest) if opts.select else "no-select"

    def judged(m: Mutant) -> bool:
        """Listed in EQUIVALENT: its survival is argued, not confirmed by running more tests."""
        return (module, m.source, m.mutation) in EQUIVALENT

    def still_valid(hit: dict[str, Any], m: Mutant) -> bool:
        """A cached survivor not judged equivalent stands only if every mapped test, as they
        are now, let it survive (a result of the selected tests alone is rerun)."""
        return hit["outcome"] != "survived" or judged(m) or hit.get("all") == all_digest

    cover = None
    tree = hash_tree(REPO)
    fresh = False  # the cached map was made on this very ledger/ tree: its baseline holds
    if opts.select and cache.get("cover", {}).get("key") == ckey:
        cover = CoverMap.from_json(cache["cover"]["map"])
        fresh = cache["cover"].get("tree") == tree

    def plan(cover: CoverMap | None) -> list[tuple[Mutant, list[str], str, str]]:
        out = []
        for m in mutants:
            if cover is None:
                chosen, why = None, "all tests"
            else:
                chosen, why = select(cover, spans, m.start, m.end)
                if chosen:
                    chosen = _with_always(module, chosen, cover)
            run = tests if chosen is None else chosen
            out.append((m, run, why, mutant_key(original, asdict(m), run, digest(run))))
        return out

    def expected(run: list[str]) -> float:
        """The tests' time in the coverage pass, start-up included (all: the whole pass)."""
        if cover is None or run is tests:
            return base_s
        return seconds_of(cover, run) + overhead

    def pending(planned: list[tuple[Mutant, list[str], str, str]]) -> bool:
        return any(
            key not in outcomes and why != "uncovered" and opts.wants(m)
            for m, _, why, key in planned
        )

    planned = plan(cover) if (cover is not None or not opts.select) else []
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ledger-mutation-") as tmp:
        copy = _Copy(Path(tmp), copied)
        base_s = cover.seconds if cover is not None else 0.0
        # A mutant to run needs a green baseline now: with selection the coverage pass is the
        # baseline (and refreshes the map), without it a plain run of the mapped tests.
        if (not planned or (pending(planned) and not fresh)) and time.monotonic() < opts.deadline:
            failed = (
                f"mutation: the tests of {module} fail without any mutant (pytest's output: "
                f"{baseline_log})"
            )
            if opts.select:
                cover = _cover(copy, module, tests, baseline_log)
                if cover is None:
                    raise SystemExit(failed)
                cache["cover"] = {"key": ckey, "tree": tree, "map": cover.to_json()}
                base_s = cover.seconds
                planned = plan(cover)
            else:
                base, base_s = _pytest(copy.path, tests, timeout=3600, log=baseline_log)
                if base != "survived":
                    raise SystemExit(failed)
            print(f"{module}: {len(mutants)} mutants, tests {base_s:.1f}s", flush=True)
        overhead = 0.0
        if cover is not None:
            overhead = max(0.0, cover.seconds - seconds_of(cover, [i["id"] for i in cover.items]))
        if not planned:  # no map and no time to make one
            planned = [(m, tests, "not run", "") for m in mutants]
        n_all = len(cover.items) if cover is not None else len(tests)
        # Each test's own limit in a forked run (fork.TestWatch), from its coverage-pass time.
        limits = limits_of(cover) if cover is not None else {}
        todo: list[tuple[int, Mutant, list[str], str, float]] = []
        for i, (m, run, why, key) in enumerate(planned):
            entry: dict[str, Any] = {
                **asdict(m),
                "tests": n_all if run is tests else len(run),
                "why": why,
            }
            if key in outcomes and still_valid(outcomes[key], m):
                results.append({**entry, **outcomes[key], "cached": True})
            elif why == "uncovered" and judged(m):
                results.append({**entry, "outcome": "survived", "seconds": 0.0})
            elif not key or not opts.wants(m):
                # No map and no time to make one, or a line outside --lines: reported as not
                # run, and run by a later call that asks for it.
                results.append({**entry, "outcome": "not-run", "seconds": 0.0})
            elif why == "uncovered":
                # No test's coverage context reached the line; a child that set up its own
                # environment is not measured, so every mapped test runs before it is reported.
                results.append({**entry, "tests": n_all})
                todo.append((i, m, tests, key, max(60.0, 3 * base_s)))
            else:
                results.append(entry)  # filled in when it has run
                todo.append((i, m, run, key, max(60.0, 3 * expected(run))))
        copies = queue.SimpleQueue[Path]()
        paths = [copy.path] if todo else []
        for n in range(1, min(opts.jobs, len(todo))):
            extra = copy.tmp / f"copy{n}"
            shutil.copytree(copy.path, extra, symlinks=True)
            paths.append(extra)
        for where in paths:
            copies.put(where)
        servers: dict[Path, ForkServer] = {}
        retired: list[ForkServer] = []  # servers no longer trusted, closed at the end
        trust: ForkTrust | None = None
        if paths and opts.fork and time.monotonic() < opts.deadline:
            servers, trust = _fork_servers(module, paths, tests, all_digest, out_dir)

        def one(m: Mutant, run: list[str], timeout: float) -> tuple[str, float, dict[str, Any]]:
            where = copies.get()
            try:
                (where / module).write_text(apply(original, m))
                outcome, secs = timed_run(where, run, timeout)
                extra: dict[str, Any] = {}
                if outcome == "survived" and run is not tests and not judged(m):
                    # The selection can miss a test: a statement that runs once per process
                    # (a cache filled, a thread started on first use) is covered only by the
                    # first test that reaches it. A survivor is reported only after every
                    # mapped test let it through.
                    outcome, more = timed_run(where, tests, max(60.0, 3 * base_s))
                    secs += more
                    extra["missed"] = outcome.startswith("killed")
                if outcome.startswith("killed"):
                    extra["tail"] = _tail(_log_of(where))
                if outcome == "killed-timeout":
                    extra["test"] = last_test(progress_of(where))
            finally:
                (where / module).write_text(original)
                copies.put(where)
            if outcome == "not-run":
                return outcome, 0.0, {}
            if outcome == "survived" and not judged(m):
                extra["all"] = all_digest  # every mapped test ran and passed
            return outcome, secs, extra

        def timed_run(where: Path, run: list[str], timeout: float) -> tuple[str, float]:
            """The tests' outcome; ``not-run`` when the budget, not the mutant, stopped them."""
            left = opts.deadline - time.monotonic()
            if left <= 0:
                return "not-run", 0.0
            done = None
            server = servers.get(where)
            log = _log_of(where)
            if server is not None:
                failed = where.parent / f"{where.name}.failed"
                done = _forked_pytest(server, where, run, min(timeout, left), log, failed, limits)
                if done is None and server.proc.poll() is not None:
                    servers.pop(where, None)  # the server is gone: plain runs from now on
                elif (
                    done is not None
                    and done[0].startswith("killed")
                    and trust is not None
                    and not confirm(server, where, failed_tests(failed) or run, timeout)
                ):
                    done = None  # the kill is not the mutant's: run it plainly
            if done is None:
                # A plain run names no test: the forked run's list must not speak for it.
                progress_of(where).unlink(missing_ok=True)
                done = _pytest(where, run, min(timeout, left), log=log)
            if done[0] == "killed-timeout" and left < timeout:
                return "not-run", 0.0
            if done[0] == "starved":
                # Wall time reached the backstop before the run had its timeout: the machine
                # was too busy to tell, not a hang. Not a result: it runs again next time.
                print(f"{module}: a run starved of CPU for {done[1]:.0f}s; not run", flush=True)
                return "not-run", 0.0
            return done

        def confirm(server: ForkServer, where: Path, check: list[str], timeout: float) -> bool:
            """A forked kill stands once the tests that failed (all the run's tests when none
            is named: a timeout, a crash) pass in a forked run of the unmutated module. This is
            the forked baseline, run only for the tests that kill, each once per fork key. When
            they fail unmutated too, forking is off for this module: plain runs from now on."""
            assert trust is not None
            if trust.knows(check):
                return True
            mutated = (where / module).read_text()
            (where / module).write_text(original)
            log = where.parent / f"{where.name}.confirm.log"
            failed = where.parent / f"{where.name}.confirm.failed"
            # Its own progress file: the mutant's names the test the mutant's run stopped in.
            progress = where.parent / f"{where.name}.confirm.progress"
            try:
                base = _forked_pytest(server, where, check, timeout, log, failed, limits, progress)
            finally:
                (where / module).write_text(mutated)
            if base is not None and base[0] == "survived":
                trust.add(check)
                return True
            if base is not None and base[0] == "starved":
                return False  # nothing learnt of forking: this mutant runs plainly
            trust.distrust()
            # Say what failed: the tests that failed, or that the run of all ``check`` (a
            # timeout's or a crash's: every test of the mutant's run) ran out of time. Until
            # 6 December this named check[0] whatever happened: round 9's "test_welch_... fails
            # forked" were the first tests of runs that a starved machine timed out.
            why = (
                "no answer from the fork server"
                if base is None
                else ("timed out" if base[0] == "killed-timeout" else "failed")
            )
            names = failed_tests(failed) or [f"{len(check)} tests from {check[0]}"]
            print(
                f"{module}: a forked run without any mutant {why} ({', '.join(names[:3])}; "
                f"log {log}); plain runs",
                flush=True,
            )
            for w in list(servers):
                retired.append(servers.pop(w))
            return False

        def record(futures: dict[Any, tuple[int, Mutant, list[str], str]]) -> None:
            for done in as_completed(futures):
                i, m, _run, key = futures[done]
                outcome, secs, extra = done.result()
                results[i].update(outcome=outcome, seconds=round(secs, 1), **extra)
                if outcome == "not-run":
                    continue
                outcomes[key] = {"outcome": outcome, "seconds": round(secs, 1), **extra}
                flag = "" if outcome.startswith("killed") else f"  <-- {outcome}"
                if outcome == "killed-timeout":  # say which test it was in, to judge the kill
                    flag = "  (timeout{}; last output: {})".format(
                        f" in {extra['test']}" if extra.get("test") else "",
                        (extra.get("tail") or ["none"])[-1],
                    )
                if extra.get("missed"):
                    flag = "  (killed by a test the selection did not pick)"
                print(
                    f"  [{i + 1}/{len(mutants)}] {secs:5.1f}s {results[i]['tests']:4d} tests "
                    f"{m.line}: {m.mutation}{flag}",
                    flush=True,
                )
                cache["mutants"] = outcomes
                if opts.cache:
                    _write_json(cache_path, cache)
                finished = [r for r in results if "outcome" in r]
                _save(module, tests, finished, saved_path, opts, final=False, base_s=base_s)

        try:
            with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
                futures = {
                    pool.submit(one, m, run, t): (i, m, run, key) for i, m, run, key, t in todo
                }
                try:
                    record(futures)
                except BaseException:
                    # Stopped (SIGTERM, Ctrl-C): leaving the pool would otherwise wait for every
                    # queued mutant to run; none starts, and the running tests are stopped.
                    pool.shutdown(wait=False, cancel_futures=True)
                    _stop_running()
                    raise
        finally:
            for server in [*servers.values(), *retired]:
                server.close()
    cache["mutants"] = outcomes
    if opts.cache:
        _write_json(cache_path, cache)
    return _save(module, tests, results, saved_path, opts, final=True, base_s=base_s)


def progress_of(copy: Path) -> Path:
    """Where a forked run in ``copy`` names each test as it starts (beside the copy)."""
    return copy.parent / f"{copy.name}.progress"


def _log_of(copy: Path) -> Path:
    """Where a mutant's test run in ``copy`` writes its output: beside the copy, not in it."""
    return copy.parent / f"{copy.name}.log"


class ForkTrust:
    """What is known of forked runs of a module's tests on this tree (``fork-baselines.json``,
    one entry per tree, tests and preloaded modules): the test lists that passed forked without
    any mutant, or that one failed (then the module runs plainly). An entry of the harness
    before 6 December is the seconds of a forked run of every mapped test: all of them."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self._lock = threading.Lock()

    def _entry(self) -> Any:
        return _load_json(self.path).get(self.key)

    def failed(self) -> bool:
        entry = self._entry()
        return isinstance(entry, dict) and entry.get("ok") is False

    def knows(self, tests: list[str]) -> bool:
        entry = self._entry()
        if isinstance(entry, int | float) and not isinstance(entry, bool):
            return True  # every mapped test passed forked
        return isinstance(entry, dict) and _digest(tests) in entry.get("passed", [])

    def _update(self, change: Any) -> None:
        with self._lock:
            known = _load_json(self.path)
            entry = known.get(self.key)
            if not isinstance(entry, dict):
                entry = {"ok": True, "passed": []}
            change(entry)
            known[self.key] = entry
            _write_json(self.path, known)

    def add(self, tests: list[str]) -> None:
        self._update(lambda e: e["passed"].append(_digest(tests)))

    def distrust(self) -> None:
        self._update(lambda e: e.update(ok=False))


def _digest(tests: list[str]) -> str:
    return hashlib.sha256(json.dumps(sorted(tests)).encode()).hexdigest()


def _fork_servers(
    module: str, paths: list[Path], tests: list[str], tests_digest: str, out_dir: Path
) -> tuple[dict[Path, ForkServer], ForkTrust | None]:
    """A fork server per copy, or none when preloading started a thread or forked runs of
    the module's tests were found to fail unmutated (cached per tree, tests and preloaded
    modules). No forked baseline of every mapped test runs first: the coverage pass is the
    baseline, and a forked kill is confirmed against its failing tests instead (``confirm``
    in :func:`run_module`), which is what the forked baseline guarded."""
    first = paths[0]
    env = _pytest_env(first)
    t0 = time.monotonic()
    preload = shared_modules(first, _pytest_args(first, tests), env, timeout=600)
    key = hashlib.sha256(
        json.dumps([hash_tree(REPO), tests, tests_digest, preload]).encode()
    ).hexdigest()
    trust = ForkTrust(out_dir / "cache" / "fork-baselines.json", key)
    if trust.failed():
        print(f"{module}: the tests failed in a forked run unmutated before; plain runs")
        return {}, None
    server = ForkServer(first, env, preload)
    if not server.ok:
        print(f"{module}: no fork server (threads after preloading: {server.threads}); plain runs")
        return {}, None
    servers = {first: server}
    for where in paths[1:]:
        other = ForkServer(where, _pytest_env(where), preload)
        if other.ok:
            servers[where] = other
    print(
        f"{module}: forked runs, {len(preload)} modules preloaded "
        f"({time.monotonic() - t0:.1f}s to start)",
        flush=True,
    )
    return servers, trust


def _with_always(module: str, chosen: list[str], cover: CoverMap) -> list[str]:
    """``chosen`` and the module's ALWAYS tests, in collection order."""
    files = tuple(f + "::" for f in ALWAYS.get(module, []))
    if not files:
        return chosen
    keep = set(chosen)
    return [i["id"] for i in cover.items if i["id"] in keep or i["id"].startswith(files)]
