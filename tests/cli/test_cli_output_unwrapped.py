"""Item 1: output to a pipe, a file or a CI log is never wrapped; ids stay on one line."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _cli_support import run_ids
from _support import run_ledger

FULL_OID = re.compile(r"b3:[0-9a-f]{64}")


def _check_ls(out: str, n_runs: int) -> None:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == n_runs + 1, out  # header + one line per run, however long the tags
    assert "a-long-tag-value-" * 6 in out


def _check_show(out: str, run_id: str) -> None:
    first = out.splitlines()[0]
    assert run_id in first and FULL_OID.search(first), first
    for line in out.splitlines():
        if "b3:" in line:
            # every object id printed is whole, on its line
            assert all(len(m) == 67 for m in re.findall(r"b3:[0-9a-f]+", line)), line


def test_piped_output_never_wraps(project: Path) -> None:
    ids = run_ids(project)
    # Without COLUMNS a pipe takes every column at its natural width.
    r = run_ledger("ls", cwd=project, COLUMNS="")
    assert r.returncode == 0, r.stderr
    _check_ls(r.stdout, len(ids))
    # COLUMNS set is the width tables fit, piped too (#39): columns go, ids stay whole.
    r = run_ledger("ls", cwd=project, COLUMNS="40")
    assert r.returncode == 0, r.stderr
    assert all(len(ln) <= 40 for ln in r.stdout.splitlines()), r.stdout
    shown = {ln.split()[0] for ln in r.stdout.splitlines()[1:] if ln.strip()}
    assert all(any(i.endswith(s) or s in i for i in ids) for s in shown), r.stdout
    # Lines that are not tables (show's, diff's) are never wrapped: an id stays on its line.
    r = run_ledger("show", ids[0], cwd=project, COLUMNS="40")
    assert r.returncode == 0, r.stderr
    _check_show(r.stdout, ids[0])
    r = run_ledger("diff", ids[0], ids[1], cwd=project, COLUMNS="40")
    assert r.returncode == 0, r.stderr
    assert f"diff {ids[0]} → {ids[1]}" in r.stdout.splitlines()[0]


def test_in_process_output_never_wraps(project: Path, cli: Callable[..., Any]) -> None:
    ids = run_ids(project)
    r = cli("ls", "-L", str(project / ".ledger"))
    assert r.exit_code == 0, r.stderr
    _check_ls(r.stdout, len(ids))
    r = cli("show", ids[0], "-L", str(project / ".ledger"))
    assert r.exit_code == 0, r.stderr
    _check_show(r.stdout, ids[0])


def test_replay_verdict_lines_are_whole_when_piped(project: Path) -> None:
    original = run_ids(project)[0]
    r = run_ledger("replay", original, cwd=project, COLUMNS="40")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = [ln for ln in lines if ln.startswith("REPRODUCED (bitwise) ")]
    assert len(head) == 1 and re.fullmatch(
        rf"REPRODUCED \(bitwise\) {re.escape(original)} → \S+-[0-9a-f]{{8}}", head[0]
    ), r.stdout
    assert re.search(r"^verdict record b3:[0-9a-f]{64}$", r.stdout, re.M), r.stdout


def test_piped_tables_have_no_trailing_blanks(project: Path) -> None:
    """Table cells are padded to their column's width; a log or file gets no trailing blanks."""
    ids = run_ids(project)
    for argv in (["ls"], ["show", ids[0]], ["ls", "--replays"]):
        r = run_ledger(*argv, cwd=project)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip()
        assert [line for line in r.stdout.splitlines() if line != line.rstrip()] == [], argv
