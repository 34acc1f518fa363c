"""A small git project with a ledger and two recorded runs, shared by the CLI tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _cli_support import METRIC, make_project
from _support import run_ledger


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs: the first named `baseline` with a long tag, the second unnamed."""
    repo = make_project(tmp_path_factory.mktemp("cli"))
    long_tag = "note=" + "a-long-tag-value-" * 6
    for extra in (["--name", "baseline", "--tag", long_tag], []):
        r = run_ledger(
            "record",
            *extra,
            "-i",
            "data.txt",
            "-m",
            METRIC,
            "--",
            sys.executable,
            "train.py",
            cwd=repo,
        )
        assert r.returncode == 0, r.stderr
    return repo
