"""``ledger replay RUN``'s plain form is parsed without typer (ledger/cli/entry.py): the fast
parser must read every argument list it takes on exactly as the typer command does, leave every
other one to typer, and the replay it runs must print and exit as typer's does."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger, subprocess_env

from ledger.cli import replay_cmds
from ledger.cli.replay_cmd import fast_options, parse_replay_argv

TAKEN = [
    ["replay", "baseline"],
    ["replay", "b3abc", "--json"],
    ["replay", "--json", "baseline", "--json"],
    ["replay", "baseline", "--keep-workspace", "--strict-env", "--include-logs"],
    ["-L", "/tmp/a", "replay", "baseline"],
    ["--ledger=/tmp/a", "replay", "-L", "/tmp/b", "baseline"],
    ["--ledger", "/tmp/a", "replay", "baseline", "--ledger", "/tmp/c"],
    ["replay", "replay"],
    ["-L", "replay", "replay", "x"],
]

LEFT_TO_TYPER = [
    ["replay"],
    ["replay", "--help"],
    ["replay", "baseline", "-h"],
    ["replay", "baseline", "--mode", "tolerance"],
    ["replay", "baseline", "--seeds", "3"],
    ["replay", "baseline", "--seed-values", "2,3"],  # seeds mode's: typer refuses it alone
    ["replay", "baseline", "--seed-values=2,3"],
    ["replay", "a", "b"],  # a second argument: typer's usage error
    ["replay", "--", "baseline"],
    ["replay", "-L"],
    ["replay", "baseline", "--ledger="],
    ["replay", "baseline", "-L", "--json"],  # a value that looks like an option
    ["replay", "baseline", "--json=1"],
    ["replay", "baseline", "--bogus"],
    ["--version", "replay", "x"],
    ["ls"],
    [],
]


@pytest.fixture
def typer_values(
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Callable[[list[str]], tuple[Any, ...]]:
    """What the typer command hands to the shared body for ``argv``."""

    def values(argv: list[str]) -> tuple[Any, ...]:
        seen: list[tuple[Any, ...]] = []

        def capture(ledger: Path | None, run: str, opts: Any, *, json_out: bool, jobs: int) -> int:
            seen.append((ledger, run, opts, json_out))
            return 0

        monkeypatch.setattr(replay_cmds, "replay_and_print", capture)
        result = cli(*argv)
        assert result.exit_code == 0, result
        assert len(seen) == 1
        return seen[0]

    return values


@pytest.mark.parametrize("argv", TAKEN, ids=[" ".join(a) for a in TAKEN])
def test_fast_parser_reads_as_typer_does(
    argv: list[str], typer_values: Callable[[list[str]], tuple[Any, ...]]
) -> None:
    fast = parse_replay_argv(argv)
    assert fast is not None, "the plain form must not need typer"
    got = (fast.ledger, fast.run, fast_options(fast), "--json" in fast.flags)
    assert got == typer_values(argv)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=[" ".join(a) or "-" for a in LEFT_TO_TYPER])
def test_other_forms_are_left_to_typer(argv: list[str]) -> None:
    assert parse_replay_argv(argv) is None


def test_fast_replay_prints_and_exits_as_typer_does(project: Path) -> None:
    import subprocess

    fast = run_ledger("replay", "baseline", cwd=project)  # python -m ledger: the fast path
    # ledger.cli.app.main (typer) in a fresh process too: in the test process, whatever other
    # tests imported (setuptools' vendored packages on sys.path) would change the environment
    # fingerprint, and the verdict would say so.
    slow = subprocess.run(
        [sys.executable, "-c", "from ledger.cli.app import main; main()", "replay", "baseline"],
        cwd=project,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fast.returncode == slow.returncode == 0, fast.stderr + slow.stderr

    def shape(out: str) -> str:  # run ids and record ids differ between the two replays
        out = re.sub(r"\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{8}", "RUN", out)
        return re.sub(r"b3:[0-9a-f]{64}", "OID", out)

    assert shape(fast.stdout) == shape(slow.stdout)
    assert "\nREPRODUCED (bitwise) RUN → RUN\n" in shape(fast.stdout)


def test_fast_replay_errors_read_as_typer_does(
    project: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = run_ledger("replay", "no-such-run", cwd=project)
    monkeypatch.chdir(project)
    slow = cli("replay", "no-such-run")
    assert (fast.returncode, fast.stderr) == (slow.exit_code, slow.stderr)
    assert fast.returncode == 2 and "no-such-run" in fast.stderr
    assert "Traceback" not in fast.stderr


def test_fast_replay_imports_no_cli_framework(project: Path) -> None:
    import subprocess

    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ledger", "replay", "baseline", "--json"],
        cwd=project,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", r.stderr, re.M))
    assert "ledger.replay.engine" in imported
    assert not {name.split(".")[0] for name in imported} & {"typer", "click"}
