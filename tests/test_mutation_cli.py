"""The mutation harness's command line (scripts/mutation.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mutation(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/mutation.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_module_named_after_tests_is_the_module_to_mutate() -> None:
    """``--tests`` takes every word after it: a module written after the tests is still the
    one mutated, not taken for a test (which left no module, and every module in MODULES ran)."""
    tests = "tests/stats/test_tolerance_edges.py"
    r = _mutation("--list", "--tests", tests, "ledger/stats/tolerance.py")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("ledger/stats/tolerance.py:") for line in lines)


def test_a_source_file_given_as_a_test_is_refused() -> None:
    r = _mutation("--list", "--tests", "ledger/not_mapped.py", "ledger/stats/tolerance.py")
    assert r.returncode == 2 and r.stdout == ""
    assert "--tests: ledger/not_mapped.py is not a test, nor a module" in r.stderr


def test_tests_that_are_all_modules_are_refused() -> None:
    r = _mutation("--list", "--tests", "ledger/stats/tolerance.py")
    assert r.returncode == 2 and "--tests names no test" in r.stderr


def test_lines_lists_only_the_mutants_on_them_and_want_one_module() -> None:
    r = _mutation("--list", "--lines", "60-70", "ledger/stats/tolerance.py")
    assert r.returncode == 0, r.stderr
    lines = [int(line.split(":")[1]) for line in r.stdout.splitlines()]
    every = _mutation("--list", "ledger/stats/tolerance.py").stdout.splitlines()
    assert lines and all(60 <= n <= 70 for n in lines)
    assert len(every) > len(lines)
    two = _mutation(
        "--list", "--lines", "60-70", "ledger/stats/tolerance.py", "ledger/store/log.py"
    )
    assert two.returncode == 2 and "--lines: name one module" in two.stderr
