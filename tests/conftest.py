from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """Run the real entry point (``ledger.cli.app.main``) in-process, with its exit code."""
    from ledger.cli.app import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["ledger", *args])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
