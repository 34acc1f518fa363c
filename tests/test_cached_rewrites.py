"""conftest.py's cached rewrites: in scripts/test.sh's runs (LEDGER_TEST_CACHE_REWRITES=1) a
test module that pytest rewrote for its assertions is cached under ``__pycache__`` although
PYTHONDONTWRITEBYTECODE is set, while the tests themselves still run with
``sys.dont_write_bytecode`` as the environment sets it. Checked on an inner pytest run under
a copy of this suite's conftest.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import inner_suite, subprocess_env

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent / "scripts"))

from mutation_harness.run import _pytest_env  # noqa: E402

INNER = """
import sys


def test_runs_without_writing_bytecode():
    assert sys.dont_write_bytecode
"""


def test_collection_caches_rewritten_modules_and_tests_write_no_bytecode(tmp_path: Path) -> None:
    inner = inner_suite(tmp_path, INNER)
    env = subprocess_env(PYTHONDONTWRITEBYTECODE="1", LEDGER_TEST_CACHE_REWRITES="1")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a deadline for a hung run, not a speed goal
    )
    assert r.returncode == 0, r.stdout + r.stderr
    cached = [p.name for p in (inner / "__pycache__").glob("test_inner.*.pyc")]
    assert len(cached) == 1 and "-pytest-" in cached[0], cached


def test_the_mutation_harness_runs_write_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutation harness started from a test.sh run (the suite's own harness tests) leaves the
    setting out: its collections import mutated sources, whose cached bytecode a restored
    source of the same size and second would reuse."""
    monkeypatch.setenv("LEDGER_TEST_CACHE_REWRITES", "1")
    env = _pytest_env(tmp_path)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and "LEDGER_TEST_CACHE_REWRITES" not in env
