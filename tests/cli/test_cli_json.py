"""Item 5: `--json` on every command that prints data; stdout then holds exactly one JSON
document, even when the command runs a program that prints."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer.main
from _cli_support import run_ids
from _support import run_ledger

from ledger.cli.app import app

# Commands whose output is not data: `cat` writes an object's raw bytes; `record`'s stdout is
# the recorded command's own output, so its --json summary goes to stderr (documented).
# cat prints raw bytes, record's JSON goes to stderr (stdout is the program's), ui is a server
# that prints only the address it listens on, report writes a site and names its folder, and
# remote add / remove change the config and print nothing but a confirmation.
# `metrics` writes the export itself: its machine-readable form is `--format jsonl` (or csv,
# parquet), tested in tests/read/test_metrics_export.py.
NO_STDOUT_JSON = {"cat", "record", "ui", "report", "remote add", "remote remove", "metrics"}


def _leaf_commands() -> dict[str, Any]:
    root = typer.main.get_command(app)
    out: dict[str, Any] = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        for sub_name, sub in (getattr(cmd, "commands", None) or {name: cmd}).items():
            out[name if sub is cmd else f"{name} {sub_name}"] = sub
    return out


def test_every_data_command_has_json() -> None:
    for name, cmd in _leaf_commands().items():
        if name in NO_STDOUT_JSON:
            continue
        assert any("--json" in p.opts for p in cmd.params), f"`ledger {name}` has no --json"


def test_json_stdout_is_one_document(project: Path, tmp_path: Path) -> None:
    a, b = run_ids(project)
    for argv in (
        ["ls"],
        ["show", a],
        ["log", a],
        ["log", a, "--stderr"],
        ["diff", a, b],
        ["checkpoints", a],
        ["verify"],
        ["gc"],
        ["reindex"],
        ["init"],
        ["config"],
    ):
        r = run_ledger(*argv, "--json", cwd=project)
        assert r.returncode == 0, (argv, r.stderr)
        json.loads(r.stdout)  # exactly one document, nothing around it
    log = json.loads(run_ledger("log", a, "--json", cwd=project).stdout)
    assert log["run_id"] == a and log["stream"] == "stdout" and "step 2 loss" in log["text"]
    err = json.loads(run_ledger("log", a, "--stderr", "--json", cwd=project).stdout)
    assert err["stream"] == "stderr" and "to stderr" in err["text"]


def test_replay_json_sends_the_programs_output_to_stderr(project: Path) -> None:
    a = run_ids(project)[0]
    r = run_ledger("replay", a, "--json", cwd=project)
    assert r.returncode == 0, r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["outcome"] == "reproduced" and verdict["original"] == a
    assert "step 0 loss" in r.stderr and "step 0 loss" not in r.stdout


def test_replay_json_in_process(project: Path, cli: Callable[..., Any], monkeypatch: Any) -> None:
    a = run_ids(project)[0]
    monkeypatch.chdir(project)
    r = cli("replay", a, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["outcome"] == "reproduced"
    assert "step 0 loss" in r.stderr


def test_log_json_in_process(project: Path, cli: Callable[..., Any]) -> None:
    a = run_ids(project)[0]
    r = cli("log", a, "--json", "-L", str(project / ".ledger"))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["text"].startswith("step 0 loss")
