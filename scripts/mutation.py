"""Mutation testing of the modules whose bugs would corrupt evidence (``make mutation``).

A small AST mutator of our own, not mutmut or cosmic-ray (measured against both on one module:
docs/mutation.md, "A maintained tool, measured"): mutmut 3 picks a mutant's tests by the calls
made in the pytest process, so the tests that reach ``ledger`` through ``python -m ledger``
children are never picked, and cosmic-ray runs every test for every mutant, several times
slower here. Here each mutant is one changed source span written into a throw-away copy of
the checkout, and the module's related tests (``MODULES``) run against that copy with ``pytest
-x``: a failing run kills the mutant, a green one lets it survive.

    python scripts/mutation.py                     # every module in MODULES
    python scripts/mutation.py ledger/store/log.py # one module
    python scripts/mutation.py --list ledger/store/log.py  # print the mutants, run nothing

Operators: comparison flips (== !=, < <=, > >=, is / is not, in / not in), != also to < and
to >, and <-> or, dropping a ``not``, + <-> -, * <-> /, True <-> False, an int constant
n -> n + 1 (0 also -> -1), a float constant x -> 2x, ``return X`` -> ``return None``,
continue <-> break, x += y -> x = y, a ``raise`` or a bare call statement -> ``pass``.
Strings are left alone (messages), and so are calls of ``os.fsync`` and ``fsync_dir``: only a
power loss shows their absence, which no test here simulates.

Survivors judged equivalent (no test can tell them apart from the original) are listed in
``EQUIVALENT`` by module, source line and mutation, each with its reason; the score counts
them apart. Results go to ``mutation-results/<module>.json``.

The harness is the package ``scripts/mutation_harness/`` (one job per module: targets, mutate,
selection, fork, run, cache, report); this file is its command line.
"""

from __future__ import annotations

import argparse
import signal
import time

from mutation_harness import REPO
from mutation_harness.cache import _load_json, _write_json
from mutation_harness.mutate import Mutant, apply, mutants_of
from mutation_harness.report import report
from mutation_harness.run import (
    Options,
    _copy_checkout,
    _fork_servers,
    _forked_pytest,
    _pytest,
    _pytest_args,
    _pytest_env,
    run_module,
)
from mutation_harness.targets import ALWAYS, EQUIVALENT, MODULES

__all__ = [
    "ALWAYS",
    "EQUIVALENT",
    "MODULES",
    "REPO",
    "Mutant",
    "Options",
    "_copy_checkout",
    "_fork_servers",
    "_forked_pytest",
    "_load_json",
    "_pytest",
    "_pytest_args",
    "_pytest_env",
    "_write_json",
    "apply",
    "main",
    "mutants_of",
    "parse_budget",
    "parse_lines",
    "report",
    "run_module",
]


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the running tests are stopped, the copy removed


def parse_budget(text: str) -> float:
    """``30m``, ``90s``, ``1h`` or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 30m)") from None


# The last line of ``--lines 584-`` (to the end of the module).
TO_THE_END = 10**9


def parse_lines(text: str) -> tuple[int, int]:
    """``584-739``, ``584-`` (to the end) or ``600`` (that line alone)."""
    first, dash, last = text.partition("-")
    try:
        lo = int(first)
        hi = int(last) if last else (TO_THE_END if dash else lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a line range: {text!r} (try 584-739)") from None
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"not a line range: {text!r} (try 584-739)")
    return lo, hi


def main() -> None:
    """The command line. SIGTERM unwinds it (so the copies are removed); the handler it had
    before is put back at the end, for a caller that runs this in its own process (a test)."""
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        _main()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all in MODULES)")
    parser.add_argument("--list", action="store_true", help="print the mutants; run nothing")
    parser.add_argument(
        "--report", action="store_true", help="print the saved results as a Markdown table"
    )
    parser.add_argument(
        "--recheck", action="store_true", help="rerun the cached survivors (after new tests)"
    )
    parser.add_argument(
        "--budget",
        type=parse_budget,
        default=None,
        help="start no mutant after this long (30m, 1h); the rest is reported as not run "
        "and a later run resumes from the cache",
    )
    parser.add_argument(
        "--no-select",
        "--full",
        dest="select",
        action="store_false",
        help="run every mapped test for each mutant, not only the tests that cover it",
    )
    parser.add_argument(
        "--no-cache", dest="cache", action="store_false", help="ignore and keep no cached results"
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        help="mutants run at once, each in its own copy of the checkout (default 1)",
    )
    parser.add_argument(
        "--no-fork",
        dest="fork",
        action="store_false",
        help="start a fresh python -m pytest for each mutant instead of forking a warm server",
    )
    parser.add_argument(
        "--lines",
        type=parse_lines,
        default=None,
        metavar="FROM-TO",
        help="only the mutants on these source lines (584-739, 584- to the end, 600); the "
        "others are reported as not run, or as cached; one module at a time",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="TEST",
        help="run these tests instead of the mapped ones (a quick first look at a module)",
    )
    args = parser.parse_args()
    if args.tests:
        # ``--tests`` takes every word after it: a module named after the tests
        # (``--tests tests/x.py ledger/store/log.py``) would be taken for a test, and with no
        # module left every module in MODULES would run. A mapped module is never a test.
        args.modules += [t for t in args.tests if t in MODULES]
        args.tests = [t for t in args.tests if t not in MODULES]
        stray = [t for t in args.tests if t.startswith("ledger/")]
        if stray:
            parser.error(
                f"--tests: {', '.join(stray)} is not a test, nor a module in MODULES "
                "(scripts/mutation_harness/targets.py)"
            )
        if not args.tests:
            parser.error("--tests names no test, only modules to mutate")
    if args.report:
        report(REPO / "mutation-results")
        return
    modules = args.modules or list(MODULES)
    for module in modules:
        if module not in MODULES:
            raise SystemExit(f"mutation: {module} has no test mapping in scripts/mutation.py")
    if args.lines is not None and len(modules) != 1:
        parser.error("--lines: name one module (the lines are that module's)")
    start = time.monotonic()
    deadline = start + args.budget if args.budget is not None else float("inf")
    opts = Options(
        select=args.select,
        cache=args.cache,
        recheck=args.recheck,
        deadline=deadline,
        jobs=args.jobs,
        tests=args.tests,
        fork=args.fork,
        lines=args.lines,
    )
    if args.list:
        for module in modules:
            for m in mutants_of(module):
                if opts.wants(m):
                    print(f"{module}:{m.line}: {m.mutation}")
        return
    not_run = 0
    for module in modules:
        summary = run_module(module, out_dir=REPO / "mutation-results", opts=opts)
        not_run += int(summary["not_run"])
    print(f"mutation: {(time.monotonic() - start) / 60:.1f} min")
    if not_run:
        if args.lines is not None and time.monotonic() < deadline:
            lo, hi = args.lines  # only --lines leaves mutants unrun with budget to spare
            why = f"outside --lines {lo}-{hi if hi < TO_THE_END else ''}"
        else:
            why = "the budget ran out" + (" or they are outside --lines" if args.lines else "")
        print(
            f"mutation: {not_run} mutants not run ({why}); run again to resume "
            "(finished results are cached)"
        )


if __name__ == "__main__":
    main()
