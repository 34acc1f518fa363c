"""The suite's guards against tests that leave their process changed (tests/conftest.py): an
environment variable, the working directory, the umask or a signal handler a test changed is
put back after it, and a test that passed yet changed one fails. Each would otherwise outlive
the test in its xdist worker, and a later test's outcome would depend on which tests the
worker ran first (a fresh clone's `make test` at 605ad48 failed that way)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LEAKS = """
import os, signal
import pytest

def test_env_set():
    os.environ["LEDGER_GUARD_LEAK"] = "1"

def test_env_removed():
    os.environ.pop("LEDGER_GUARD_KEEP")

def test_env_after():
    assert "LEDGER_GUARD_LEAK" not in os.environ
    assert os.environ["LEDGER_GUARD_KEEP"] == "kept"

def test_cwd(tmp_path):
    os.chdir(tmp_path)

def test_cwd_after():
    assert os.getcwd() == os.environ["LEDGER_GUARD_CWD"]

def test_umask():
    os.umask(0o077)

def test_umask_after():
    mask = os.umask(0o022)
    os.umask(mask)
    assert mask == 0o022

def test_signal():
    signal.signal(signal.SIGUSR1, lambda *a: None)

def test_signal_after():
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL

def test_a_failed_test_is_put_back_too():
    os.environ["LEDGER_GUARD_FAILED"] = "1"
    signal.signal(signal.SIGUSR2, lambda *a: None)
    assert False, "fails on its own"

def test_after_the_failed_one():
    assert "LEDGER_GUARD_FAILED" not in os.environ
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL

def test_a_library_setting_is_left(monkeypatch):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/somewhere"

def test_monkeypatch_is_fine(monkeypatch):
    monkeypatch.setenv("LEDGER_GUARD_LEAK", "2")
    monkeypatch.chdir("/")
"""


def test_a_test_that_leaves_its_process_changed_fails_and_the_next_finds_it_as_before(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_leaks.py").write_text(LEAKS)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "LEDGER_TEST_", "TORCHINDUCTOR_"))
    }
    tests = str(Path(__file__).resolve().parent)
    env |= {
        "PYTHONPATH": tests,
        "LEDGER_GUARD_KEEP": "kept",
        "LEDGER_GUARD_CWD": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    plugins = ["-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "conftest"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins, "-rfE", "test_leaks.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = r.stdout
    errors = {
        line.split("::")[1].split(" ")[0]
        for line in out.splitlines()
        if line.startswith("ERROR test_leaks.py::")
    }
    failed = {
        line.split("::")[1].split(" ")[0]
        for line in out.splitlines()
        if line.startswith("FAILED test_leaks.py::")
    }
    assert errors == {
        "test_env_set",
        "test_env_removed",
        "test_cwd",
        "test_umask",
        "test_signal",
    }, out
    assert failed == {"test_a_failed_test_is_put_back_too"}, out  # its own failure, no more
    assert "$LEDGER_GUARD_LEAK: None -> '1'" in out
    assert "$LEDGER_GUARD_KEEP: 'kept' -> None" in out
    assert "umask: 0022 -> 0077" in out
    assert "SIGUSR1 -> <function" in out
    assert "1 failed, 12 passed, 5 errors" in out, out  # the leaks pass, then error
