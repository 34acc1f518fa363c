"""User data (names, tags, commands, config, paths) is printed as written: never read as rich
markup, which would drop `[train]`, restyle `[bold]` or fail on a stray `[/]`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _cli_support import make_project, run_ids
from _support import run_ledger

WEIRD = ["[train]", "[bold]x[/bold]", "[/]", "[link=http://e]y"]


@pytest.fixture(scope="module")
def weird(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("markup"))
    for i in range(2):
        args = [
            "record",
            "--name",
            f"run[{i}] [red]",
            "--tag",
            "split=[train]",
            "--",
            sys.executable,
            "train.py",
            *WEIRD,
            f"[x{i}]",
        ]
        r = run_ledger(*args, cwd=repo)
        assert r.returncode == 0, r.stderr
    return repo


def test_show_prints_names_tags_and_commands_verbatim(weird: Path) -> None:
    run = run_ids(weird)[0]
    r = run_ledger("show", run, cwd=weird)
    assert r.returncode == 0, r.stderr
    assert "run[0] [red]" in r.stdout
    assert "split=[train]" in r.stdout
    assert " ".join([*WEIRD, "[x0]"]) in r.stdout


def test_diff_prints_both_commands_verbatim(weird: Path) -> None:
    a, b = run_ids(weird)
    r = run_ledger("diff", a, b, cwd=weird)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("command:"))
    assert " ".join([*WEIRD, "[x0]"]) in line and " ".join([*WEIRD, "[x1]"]) in line


def test_ls_prints_names_verbatim(weird: Path) -> None:
    r = run_ledger("ls", cwd=weird)
    assert r.returncode == 0, r.stderr
    assert "run[0] [red]" in r.stdout and "run[1] [red]" in r.stdout


def test_a_newline_in_a_name_or_tag_cannot_fake_a_row(tmp_path: Path) -> None:
    repo = make_project(tmp_path)
    r = run_ledger(
        "record", "--name", "ok\n fake0  run  succeeded", "--tag", "k=a\tb\nc",
        "--", sys.executable, "train.py", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run_ledger("ls", cwd=repo)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert len(lines) == 2, r.stdout  # the header and one run
    assert "ok\\x0a fake0  run  succeeded" in lines[1] and "k=a\\x09b\\x0ac" in lines[1]
    r = run_ledger("show", run_ids(repo)[0], cwd=repo)
    assert "  name      ok\\x0a fake0  run  succeeded\n" in r.stdout
    assert "  tags      k=a\\x09b\\x0ac\n" in r.stdout
