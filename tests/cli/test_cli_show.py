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
    # Human units, not raw floats and byte counts; no "signal None" for a run that exited.
    assert re.search(
        r"^  exit      0  wall \d+\.\d{1,2} s  peak RSS \d+\.\d (KiB|MiB|GiB)$", out, re.M
    ), out


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


@pytest.mark.parametrize(
    "n, text",
    [(None, "?"), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (57249792, "54.6 MiB"),
     (3 * 1024**4, "3.0 TiB")],
)  # fmt: skip
def test_human_bytes(n: int | None, text: str) -> None:
    from ledger._units import human_bytes

    assert human_bytes(n) == text


@pytest.mark.parametrize(
    "s, text",
    [(0.112655, "0.11 s"), (2.345, "2.3 s"), (42.4, "42 s"), (245, "4 min 05 s"),
     (7380, "2 h 03 min"), (None, "?")],
)  # fmt: skip
def test_human_seconds(s: float | None, text: str) -> None:
    from ledger._units import human_seconds

    assert human_seconds(s) == text
