"""Long user text is cut where the CLI prints it, and printing it takes no time to speak of: one
run name of 64 KiB (names arrive by import and pull too) once kept ``ledger ls`` busy for
minutes, a 1 MiB string in a claims file kept ``ledger audit`` busy for more (a regex stripping
the blanks that padded every row to the long cell's width was quadratic). Every table cell and
line of user text goes through ``ledger._units.one_line``: escaped, cut, marked. The commands
run as real processes under timeouts a hang would blow; ``--json`` still holds the text whole."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import make_project, on_a_terminal, run_ids
from _support import init_ledger, run_ledger, subprocess_env
from hypothesis import given
from hypothesis import strategies as st

from ledger._units import CELL_MAX, LINE_MAX, one_line
from ledger.cli._output import strip_trailing_blanks

LONG_NAME = "long-name " * 6553 + "end\x1b]0;pwned\x07"  # 64 KiB and an OSC title at the end
LONG_ARG = "arg-" * 16384  # 64 KiB on the command line
MIB = 1 << 20


def _ledger(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("long"))
    for i in range(2):
        r = run_ledger(
            "record", "--name", LONG_NAME, "--tag", f"k={'v' * 70000}",
            "--", sys.executable, "train.py", f"{LONG_ARG}{i}", cwd=repo,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    return repo


def test_one_line_escapes_cuts_and_marks() -> None:
    assert one_line("a\nb\x1b[31m") == "a\\x0ab\\x1b[31m"
    assert one_line("x" * CELL_MAX) == "x" * CELL_MAX
    cut = one_line("y" * (CELL_MAX + 1))
    assert cut == "y" * CELL_MAX + f"… [{CELL_MAX + 1:,} chars]"
    assert one_line("\x07" * MIB).startswith("\\x07" * CELL_MAX + "… [1,048,576 chars]")
    assert len(one_line("z" * MIB, LINE_MAX)) < LINE_MAX + 30


@given(st.text(alphabet=" \tab\n", max_size=60))
def test_trailing_blanks_are_stripped_as_the_regex_did(text: str) -> None:
    assert strip_trailing_blanks(text) == re.sub(r"[ \t]+(?=\n|$)", "", text)


def test_ls_and_show_cut_a_64_kib_name(repo: Path) -> None:
    r = _ledger("ls", cwd=repo)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3, r.stdout[:2000]  # the header and two runs
    assert all(len(line) < 2 * CELL_MAX + 200 for line in lines), [len(x) for x in lines]
    assert lines[1].count(f"… [{len(LONG_NAME):,} chars]") == 1
    assert "… [70,002 chars]" in lines[1]  # the tags cell
    run = run_ids(repo)[0]
    r = _ledger("show", run, cwd=repo)
    assert r.returncode == 0, r.stderr
    assert f"  name      {one_line(LONG_NAME)}\n" in r.stdout
    command = next(ln for ln in r.stdout.splitlines() if ln.startswith("  command   "))
    assert command.endswith(" chars]") and len(command) < LINE_MAX + 100
    assert max(len(line) for line in r.stdout.splitlines()) < LINE_MAX + 100
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    # What is stored is whole: --json prints it as recorded.
    full = json.loads(_ledger("ls", "--json", cwd=repo).stdout)
    assert {row["name"] for row in full} == {LONG_NAME}


def test_ls_on_a_terminal_cuts_the_name_too(repo: Path) -> None:
    rc, out = on_a_terminal(["ls"], repo)
    assert rc == 0, out[-2000:]
    text = out.decode("utf-8", errors="replace")
    assert f"[{len(LONG_NAME):,} chars]" in text.replace("\r\n", "")
    assert "\x1b]0;" not in text and "\x07" not in text
    assert len(out) < 20_000


def test_diff_cuts_the_long_commands(repo: Path) -> None:
    a, b = run_ids(repo)
    r = _ledger("diff", a, b, cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("command:"))
    assert line.count("chars]") == 2 and len(line) < 2 * LINE_MAX + 100


def test_audit_with_a_1_mib_string_prints_a_short_report(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    big = "c" * MIB
    (tmp_path / "claims.yaml").write_text(
        "paper: P\nclaims:\n"
        f'  - id: "{big}"\n'
        f'    metric: "m{big}"\n'
        "    value: 93.10\n    spread: 0.2\n    spread_type: std\n    n_seeds: 5\n"
        "    split: test\n    runs: {names: [exp]}\n",
        encoding="utf-8",
    )
    r = _ledger("audit", "claims.yaml", cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]  # no run matches: an error verdict, not a hang
    assert "Traceback" not in r.stderr
    assert r.stdout.count(f"… [{MIB:,} chars]") == 2  # the summary's claim cell, its heading
    metric = re.compile(rf"\bmc{{{CELL_MAX - 1}}}… \[1,048,5\d\d chars\]")
    assert metric.search(r.stdout), r.stdout[:3000]
    assert len(r.stdout) < 10 * LINE_MAX


def test_a_check_line_is_one_short_line() -> None:
    from ledger.check.report import item_line
    from ledger.records.check import CheckItem

    item = CheckItem(
        level="static", name="n\x1b]0;t\x07", passed=False, figure="f\nFAKE  ok" + "x" * MIB
    )
    line = item_line(item)
    assert "\n" not in line and "\x1b" not in line and len(line) < LINE_MAX + 40
    assert line.startswith("FAIL  static/n\\x1b]0;t\\x07: f\\x0aFAKE  ok") and "chars]" in line
