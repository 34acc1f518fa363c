"""Item 7: `ledger show` without --json lists what a reviewer looks for."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_support import make_project, run_ids
from _support import run_ledger


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("show"))
    (repo / "config.yaml").write_text("lr: 0.1\nmodel:\n  width: 64\n")
    with (repo / "train.py").open("a") as f:
        f.write("# an uncommitted change\n")
    (repo / "helper.py").write_text("X = 1\n")
    (repo / "out").mkdir()
    r = run_ledger(
        "record", "-c", "config.yaml", "-i", "data.txt", "-o", "out", "--",
        sys.executable, "train.py", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run_ledger("replay", run_ids(repo)[0], cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo


def _check(out: str, run_id: str) -> None:
    assert re.search(r"^  patched   train\.py$", out, re.M), out
    assert re.search(r"^  untracked (helper\.py|config\.yaml)$", out, re.M), out
    assert "  config    lr = 0.1\n" in out and '  config    model = {"width": 64}\n' in out
    assert re.search(r"^  input     data\.txt  b3:[0-9a-f]{64}  20 B$", out, re.M), out
    assert re.search(r"^  output    out  ", out, re.M)
    assert re.search(r"^  replayed by \S+ \(succeeded\)$", out, re.M), out
    assert re.search(r"^  verdict   bitwise of this run: reproduced", out, re.M), out


def test_show_subprocess(reviewed: Path) -> None:
    run_id = run_ids(reviewed)[0]
    r = run_ledger("show", run_id, cwd=reviewed)
    assert r.returncode == 0, r.stderr
    _check(r.stdout, run_id)


def test_show_in_process(reviewed: Path, cli: Callable[..., Any]) -> None:
    run_id = run_ids(reviewed)[0]
    r = cli("show", run_id, "-L", str(reviewed / ".ledger"))
    assert r.exit_code == 0, r.stderr
    _check(r.stdout, run_id)
