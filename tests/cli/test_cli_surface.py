"""Item 3: --version, the global --ledger/-L before or after the command, shell completion,
choices listed by --help, real option types, and record's usage line."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from _support import run_ledger

import ledger
from ledger.cli._choices import ExportFormat, ReplayMode, RunStatus, SeedExecutor


def test_version(cli: Callable[..., Any]) -> None:
    assert cli("--version").stdout == f"ledger {ledger.__version__}\n"
    r = run_ledger("--version")
    assert r.returncode == 0 and r.stdout == f"ledger {ledger.__version__}\n"


def test_global_ledger_before_and_after_the_command(
    project: Path, tmp_path: Path, cli: Callable[..., Any]
) -> None:
    where = str(project / ".ledger")
    for argv in (["-L", where, "ls", "--json"], ["ls", "--json", "-L", where]):
        r = run_ledger(*argv, cwd=tmp_path, LEDGER_DIR="")
        assert r.returncode == 0, r.stderr
        assert len(json.loads(r.stdout)) == 2
        assert len(json.loads(cli(*argv).stdout)) == 2
    # after the command wins over before it
    r = cli("--ledger", str(tmp_path / "nope"), "ls", "--ledger", where, "--json")
    assert r.exit_code == 0, r.stderr
    # init honours the global option too
    fresh = tmp_path / "fresh"
    r = cli("-L", str(fresh), "init", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["path"] == str(fresh)


def test_shell_completion_script() -> None:
    r = run_ledger("--show-completion", "bash")
    assert r.returncode == 0, r.stderr
    assert "_LEDGER_COMPLETE" in r.stdout


@pytest.mark.parametrize(
    "argv, listed",
    [
        (["replay", "--help"], "bitwise|tolerance|seeds"),
        (["ls", "--help"], "running|succeeded|failed|killed|interrupted|abandoned"),
        (["checkpoint", "export", "--help"], "safetensors|pt"),
    ],
)
def test_help_lists_choices(cli: Callable[..., Any], argv: list[str], listed: str) -> None:
    r = cli(*argv)
    assert r.exit_code == 0 and listed in r.stdout


def test_choices_match_the_library() -> None:
    from ledger.records.run import RunStatus as LibStatus
    from ledger.replay.options import Mode
    from ledger.torch.checkpoint.export import Format

    assert [m.value for m in ReplayMode] == list(get_args(Mode))
    assert [f.value for f in ExportFormat] == list(get_args(Format))
    assert [s.value for s in RunStatus] == [*get_args(LibStatus), "abandoned"]
    from ledger.replay.options import EXECUTORS, ExecutorName

    assert [e.value for e in SeedExecutor] == list(EXECUTORS) == list(get_args(ExecutorName))


COMMANDS = [
    [],
    ["init"],
    ["verify"],
    ["gc"],
    ["cat"],
    ["reindex"],
    ["record"],
    ["ls"],
    ["show"],
    ["log"],
    ["replay"],
    ["diff"],
    ["audit"],
    ["checkpoints"],
    ["checkpoint", "export"],
    ["config"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c) or "ledger" for c in COMMANDS])
def test_help_shows_real_types(cli: Callable[..., Any], argv: list[str]) -> None:
    r = cli(*argv, "--help")
    assert r.exit_code == 0, r.stderr
    assert "<bool>" not in r.stdout and "list[" not in r.stdout, r.stdout
    assert "Usage: ledger " in r.stdout
    # Arguments read as documented (`RUN`), not typer's `{RUN}` and `RUN <str>`.
    assert "<str>" not in r.stdout and "{" not in r.stdout.splitlines()[0], r.stdout


def test_record_usage_line(cli: Callable[..., Any]) -> None:
    r = cli("record", "--help")
    assert r.stdout.startswith("Usage: ledger record [OPTIONS] -- CMD [ARGS]...")
    p = run_ledger("record", "--help")
    assert p.stdout.startswith("Usage: ledger record [OPTIONS] -- CMD [ARGS]...")
    assert re.search(r"--input PATH", p.stdout) and re.search(r"--tag KEY=VALUE", p.stdout)


def test_no_arguments_prints_help(cli: Callable[..., Any]) -> None:
    for argv in ([], ["checkpoint"]):
        r = cli(*argv)
        assert r.exit_code == 0 and r.stdout.startswith("Usage: ledger") and r.stderr == ""
    assert cli("ls", "-h").stdout.startswith("Usage: ledger ls [OPTIONS]")
    p = run_ledger()
    assert p.returncode == 0 and "Commands:" in p.stdout
