"""Item 10: project defaults for `ledger record` in pyproject.toml [tool.ledger.record] or
.ledger/config.toml, shown by `ledger config`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_support import METRIC, make_project
from _support import run_ledger

from ledger.store import Store

PYPROJECT = f"""\
[project]
name = "demo"

[tool.ledger.record]
input = ["data.txt"]
metric = ['{METRIC}']
tags = {{ project = "demo", owner = "ann" }}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_project(tmp_path)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / ".ledger" / "config.toml").write_text('[record]\ntags = { owner = "bob" }\n')
    return repo


def test_config_shows_merged_defaults(
    repo: Path, cli: Callable[..., Any], monkeypatch: Any
) -> None:
    r = run_ledger("config", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    cfg = json.loads(r.stdout)
    assert cfg["sources"] == [str(repo / "pyproject.toml"), str(repo / ".ledger" / "config.toml")]
    assert cfg["record"]["input"] == ["data.txt"]
    assert cfg["record"]["tags"] == {"project": "demo", "owner": "bob"}
    monkeypatch.chdir(repo)
    text = cli("config").stdout
    assert "record.input   data.txt" in text and "record.tags    owner=bob" in text


def test_record_applies_defaults(repo: Path) -> None:
    r = run_ledger("record", "--tag", "owner=cy", "--", sys.executable, "train.py", cwd=repo)
    assert r.returncode == 0, r.stderr
    store = Store.open(repo / ".ledger")
    (run_id,) = [n.split("/", 1)[1] for n, _ in store.refs.iter("runs/")]
    info = json.loads(run_ledger("show", run_id, "--json", cwd=repo).stdout)
    assert info["run"]["tags"] == {"project": "demo", "owner": "cy"}
    assert [i["path"] for i in info["contract"]["inputs"]] == ["data.txt"]
    assert {m["name"] for m in info["run"]["metrics"]} == {"loss"}


def test_no_defaults(repo: Path) -> None:
    r = run_ledger("record", "--no-defaults", "--", sys.executable, "train.py", cwd=repo)
    assert r.returncode == 0, r.stderr
    rows = json.loads(run_ledger("ls", "--json", cwd=repo).stdout)
    assert rows[0]["tags"] == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("[tool.ledger.record]\ninputs = ['x']\n", "unknown key tool.ledger.record.inputs"),
        ("[tool.ledger.record]\ninput = 3\n", "tool.ledger.record.input in"),
        ("[tool.ledger.record]\ntags = ['a']\n", "tool.ledger.record.tags in"),
        ("[tool.ledger]\nrecrod = {}\n", "unknown key tool.ledger.recrod"),
        ("[tool.ledger.record\n", "is not valid TOML"),
    ],
)
def test_bad_config_is_exit_2(repo: Path, text: str, message: str) -> None:
    (repo / "pyproject.toml").write_text(text)
    for argv in (["config"], ["record", "--", sys.executable, "train.py"]):
        r = run_ledger(*argv, cwd=repo)
        assert r.returncode == 2 and r.stderr.startswith("ledger: error: "), r.stderr
        assert message in r.stderr
    assert not list((repo / ".ledger" / "refs" / "runs").glob("*"))


def test_no_config_anywhere(tmp_path: Path, cli: Callable[..., Any]) -> None:
    repo = make_project(tmp_path)
    r = run_ledger("config", cwd=repo)
    assert r.returncode == 0 and "No project defaults" in r.stdout
