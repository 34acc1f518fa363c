"""``ledger record``'s plain form is parsed without typer (ledger/cli/entry.py): the fast parser
must read every argument list it takes on exactly as the typer command does, and leave every
other one (help, usage errors, no ``--``) to typer."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger

from ledger.cli import run_cmds
from ledger.cli.record_cmd import RecordArgs, parse_record_argv

PY = sys.executable

TAKEN = [
    ["record", "--", PY, "-c", "pass"],
    ["record", "--", PY, "train.py", "--lr", "0.1", "--", "x"],
    ["record", "-n", "base", "--tag", "a=1", "-t", "b=2", "--", PY, "-c", "pass"],
    ["record", "--name=base", "--input=data", "-i", "more", "--", PY, "t.py"],
    ["record", "-o", "out", "--output", "ckpt", "-c", "cfg.yaml", "--config=b.toml", "--", "t"],
    ["record", "-m", r"loss (?P<loss>\S+)", r"--metric=acc=(?P<acc>\S+)", "--", "t"],
    ["record", "-e", "FOO", "--env", "BAR", "--require-clean", "--json", "--", "t"],
    ["record", "--no-store-inputs", "--no-defaults", "--", "t", "-n", "x"],
    ["-L", "/tmp/a", "record", "--", "t"],
    ["--ledger", "/tmp/a", "record", "-L", "/tmp/b", "--", "t"],
    ["--ledger=/tmp/a", "record", "--ledger=/tmp/c", "--name", "n", "--", "t"],
    ["record", "--name", "n", "--name", "m", "--json", "--json", "--", "t"],
]

LEFT_TO_TYPER = [
    ["record"],
    ["record", "--"],
    ["record", "--help"],
    ["record", "-h", "--", "t"],
    ["record", PY, "-c", "pass"],  # no `--`: typer reads -c as --config
    ["record", "--bogus", "--", "t"],
    ["record", "--name", "--", "t"],  # a value that looks like an option
    ["record", "-nbase", "--", "t"],
    ["record", "--name="],
    ["record", "--name", ""],
    ["record", "--json=1", "--", "t"],
    ["--version", "record", "--", "t"],
    ["ls"],
    [],
    ["-L"],
    ["-L", "x"],
]


@pytest.fixture
def typer_values(
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Callable[[list[str]], RecordArgs]:
    """What the typer command hands to the shared body for ``argv``."""

    def values(argv: list[str]) -> RecordArgs:
        seen: list[RecordArgs] = []

        def capture(args: RecordArgs) -> int:
            seen.append(args)
            return 0

        monkeypatch.setattr(run_cmds, "run_record", capture)
        result = cli(*argv)
        assert result.exit_code == 0, result
        assert len(seen) == 1
        return seen[0]

    return values


@pytest.mark.parametrize("argv", TAKEN, ids=[" ".join(a) for a in TAKEN])
def test_fast_parser_reads_as_typer_does(
    argv: list[str], typer_values: Callable[[list[str]], RecordArgs]
) -> None:
    fast = parse_record_argv(argv)
    assert fast is not None, "the plain form must not need typer"
    assert fast == typer_values(argv)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=[" ".join(a) or "-" for a in LEFT_TO_TYPER])
def test_other_forms_are_left_to_typer(argv: list[str]) -> None:
    assert parse_record_argv(argv) is None


ERRORS = [
    (["record", "--tag", "bad", "--", PY, "-c", "pass"], 2, "--tag 'bad' is not KEY=VALUE"),
    (["-L", "no-such-ledger", "record", "--", PY, "-c", "pass"], None, "no-such-ledger"),
    (["record", "--", "no-such-program-xyz"], 2, "'no-such-program-xyz' was not found on PATH"),
    (["record", "--config", "missing.yaml", "--", PY, "-c", "pass"], 2, "missing.yaml"),
]


@pytest.mark.parametrize("argv,code,text", ERRORS, ids=[e[2] for e in ERRORS])
def test_errors_read_the_same_on_both_paths(
    project: Path,
    cli: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    code: int | None,
    text: str,
) -> None:
    assert parse_record_argv(argv) is not None
    fast = run_ledger(*argv, cwd=project)  # python -m ledger: the fast path
    monkeypatch.chdir(project)
    slow = cli(*argv)  # ledger.cli.app.main: typer
    assert fast.returncode == slow.exit_code
    assert code is None or fast.returncode == code
    assert fast.stderr == slow.stderr
    assert text in fast.stderr and "Traceback" not in fast.stderr
