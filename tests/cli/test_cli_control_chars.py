"""Control characters in user data (an ESC sequence in a run name, tag or command) never reach
the reader's terminal raw: every command prints them as ``\\x1b``-style escapes, in tables, in
plain lines and in error messages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _cli_support import make_project, run_ids
from _support import run_ledger

RED = "\x1b[31mRED\x1b[0m"
TITLE = "\x1b]0;pwned\x07"
CSI8 = "\x9b2J"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("ctl"))
    for i in range(2):
        r = run_ledger(
            "record",
            "--name",
            f"n{i}{RED}",
            "--tag",
            f"t={TITLE}",
            "--",
            sys.executable,
            "train.py",
            CSI8,
            cwd=repo,
        )
        assert r.returncode == 0, r.stderr
    return repo


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)


@pytest.mark.parametrize(
    "args",
    [("ls",), ("show", "RUN0"), ("diff", "RUN0", "RUN1"), ("verify",)],
    ids=["ls", "show", "diff", "verify"],
)
def test_control_characters_are_escaped(repo: Path, args: tuple[str, ...]) -> None:
    ids = run_ids(repo)
    argv = [{"RUN0": ids[0], "RUN1": ids[1]}.get(a, a) for a in args]
    r = run_ledger(*argv, cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    _clean(r.stdout)
    _clean(r.stderr)
    if args[0] in ("ls", "show"):
        assert "\\x1b[31mRED\\x1b[0m" in r.stdout


def test_show_escapes_tag_and_command(repo: Path) -> None:
    r = run_ledger("show", run_ids(repo)[0], cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "\\x1b]0;pwned" in r.stdout  # rich itself drops BEL, BS, VT, FF and CR
    assert "\\x9b2J" in r.stdout


def test_error_lines_escape_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    from ledger.cli._output import report_error

    report_error(f"no run {RED}", f"try {TITLE}")
    err = capsys.readouterr().err
    _clean(err)
    assert "ledger: error: no run \\x1b[31mRED\\x1b[0m\n" in err
    assert "ledger: hint: try \\x1b]0;pwned\\x07\n" in err
