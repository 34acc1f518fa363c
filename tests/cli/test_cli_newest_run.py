"""`ledger log` and `ledger show` without a run mean the newest run, as `git log` means HEAD."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import new_project, run_ledger


def _record(proj: Path, text: str) -> str:
    code = f"import sys; print({text!r}); print('err ' + {text!r}, file=sys.stderr)"
    r = run_ledger("record", "--json", "--", sys.executable, "-c", code, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return new_project(tmp_path / "proj")


def test_no_run_given_means_the_newest(
    proj: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for argv in (["show"], ["log"]):
        r = run_ledger(*argv, cwd=proj)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert r.stderr.startswith(f"ledger: error: no runs in {proj / '.ledger'} yet"), r.stderr
        assert "ledger: hint: `ledger record -- CMD ARGS` records one" in r.stderr
    _record(proj, "first")
    second = _record(proj, "second")
    r = run_ledger("log", cwd=proj)
    assert (r.returncode, r.stdout) == (0, "second\n"), r.stderr
    assert run_ledger("log", "--stderr", cwd=proj).stdout == "err second\n"
    # show takes two paths (the plain form without typer, and typer's): the same run on both
    fast = run_ledger("show", "--json", cwd=proj)
    assert fast.returncode == 0 and json.loads(fast.stdout)["run"]["run_id"] == second
    monkeypatch.chdir(proj)
    typer_path = cli("show", "--ledger", ".ledger", "--json")
    assert typer_path.exit_code == 0 and json.loads(typer_path.stdout)["run"]["run_id"] == second
    shown = run_ledger("show", cwd=proj).stdout
    assert (
        shown.startswith(f"run {second}") and shown == run_ledger("show", second, cwd=proj).stdout
    )
    # A replay is a run too: the newest one now.
    assert run_ledger("replay", second, cwd=proj).returncode == 0
    newest = json.loads(run_ledger("show", "--json", cwd=proj).stdout)["run"]
    assert newest["run_id"] != second and newest["replay_of"] == second
