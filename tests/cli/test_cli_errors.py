"""Item 4: every error, typer's own parse errors included, is `ledger: error: …` + hint, with
its documented exit code and no traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger, subprocess_env

BAD = [
    (["replay", "x", "--rtol", "abc"], 2, "Invalid value for '--rtol'"),
    (["ls", "--bogus"], 2, "No such option: --bogus"),
    (["--bogus"], 2, "No such option: --bogus"),
    (["ls", "--limit", "0"], 2, "Invalid value for '--limit'"),
    (["replay", "x", "--mode", "fast"], 2, "'fast' is not one of 'bitwise', 'tolerance', 'seeds'"),
    (["checkpoint", "export", "x", "-f", "onnx", "-o", "y"], 2, "'onnx' is not one of"),
    (["gc", "--grace-hours", "-1"], 2, "Invalid value for '--grace-hours'"),
    (["show", "a", "b"], 2, "Got unexpected extra argument(s) (b)"),
    (["nosuchcommand"], 2, "No such command 'nosuchcommand'"),
    (["audit", "missing.yaml"], 2, "'missing.yaml' does not exist"),
    (["show", "nosuchrun"], 2, "no run 'nosuchrun'"),
    (["record", "--tag", "novalue", "--", "true"], 2, "--tag 'novalue' is not KEY=VALUE"),
]


def _check(code: int, out: str, err: str, expected: int, message: str) -> None:
    assert code == expected, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0].startswith("ledger: error: ") and message in lines[0], err
    assert lines[1].startswith("ledger: hint: "), err


@pytest.mark.parametrize("argv, expected, message", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_errors_subprocess(project: Path, argv: list[str], expected: int, message: str) -> None:
    r = run_ledger(*argv, cwd=project)
    _check(r.returncode, r.stdout, r.stderr, expected, message)


@pytest.mark.parametrize("argv, expected, message", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_errors_in_process(
    project: Path,
    cli: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    expected: int,
    message: str,
) -> None:
    monkeypatch.chdir(project)
    r = cli(*argv)
    _check(r.exit_code, r.stdout, r.stderr, expected, message)


def test_no_ledger_is_exit_3(tmp_path: Path, cli: Callable[..., Any]) -> None:
    r = cli("-L", str(tmp_path / "none"), "ls")
    assert r.exit_code == 3 and r.stderr.startswith("ledger: error: ")
    p = run_ledger("ls", cwd=tmp_path, LEDGER_DIR="")
    assert p.returncode == 3 and p.stderr.startswith("ledger: error: no .ledger ledger")


def test_unwritable_report_path_is_an_error_not_a_traceback(project: Path, tmp_path: Path) -> None:
    claims = tmp_path / "claims.yaml"
    claims.write_text("claims: []\n")
    r = run_ledger(
        "audit", str(claims), "--html", str(tmp_path / "no" / "dir" / "r.html"), cwd=project
    )
    assert "Traceback" not in r.stderr
    assert r.returncode == 2 and r.stderr.startswith("ledger: error: "), r.stderr


@pytest.mark.parametrize(
    "argv", [["ls", "--json"], ["ls"], ["--help"], ["show", "--help"], ["verify"], ["config"]]
)
def test_closed_pipe_is_quiet(project: Path, argv: list[str]) -> None:
    """`ledger ls | head -0`: the reader is gone before ledger writes; no traceback, and the
    exit is 141 (128 + SIGPIPE), never 1, which means a failed check."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv],
        cwd=project,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the child (still importing) writes anything
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=60)
    assert err == "" and proc.returncode == 141, (proc.returncode, err)
