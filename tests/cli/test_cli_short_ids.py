"""Item 2: `ledger ls` shows a short unique id, never cut, that every command accepts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_support import run_ids
from _support import run_ledger

from ledger.index.short_ids import MIN_LENGTH, match_short_id, short_ids


def test_short_ids_are_unique_and_not_id_prefixes() -> None:
    ids = [
        "20261130T100000.000000Z-abcdef01",
        "20261130T100001.000000Z-abcdef02",  # shares 7 hex digits with the first
        "20261130T100002.000000Z-12345678",
        "20261130T100003.000000Z-20261130",  # tail is a prefix of every id: keeps its full id
    ]
    short = short_ids(ids, avoid={"123456"})
    assert short[ids[0]] == "abcdef01" and short[ids[1]] == "abcdef02"
    assert short[ids[2]] == "1234567"  # "123456" is a run name, which resolves first
    assert short[ids[3]] == ids[3]
    assert all(len(s) >= MIN_LENGTH for s in short.values())
    for run_id, s in short.items():
        assert match_short_id(ids, s) == [run_id] or s == run_id
    assert match_short_id(ids, "abcdef") == ids[:2]
    assert match_short_id(ids, "xyz!") == []


def _ls_short(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


def test_ls_shows_short_ids_every_command_accepts(project: Path) -> None:
    ids = run_ids(project)
    r = run_ledger("ls", cwd=project)
    assert r.returncode == 0, r.stderr
    shorts = _ls_short(r.stdout)
    assert len(shorts) == 2 and "…" not in r.stdout
    newest, oldest = shorts
    assert ids[1].split("-")[1].startswith(newest) and ids[0].split("-")[1].startswith(oldest)
    rows = json.loads(run_ledger("ls", "--json", cwd=project).stdout)
    assert [row["short_id"] for row in rows] == shorts
    assert [row["run_id"] for row in rows] == [ids[1], ids[0]]
    for argv in (
        ["show", oldest],
        ["log", oldest],
        ["checkpoints", oldest],
        ["diff", oldest, newest],
    ):
        r = run_ledger(*argv, cwd=project)
        assert r.returncode == 0, (argv, r.stderr)
    show = json.loads(run_ledger("show", "--json", oldest, cwd=project).stdout)
    assert show["run"]["run_id"] == ids[0]


def test_ls_unknown_status_is_refused(project: Path, cli: Callable[..., Any]) -> None:
    r = run_ledger("ls", "--status", "bogus", cwd=project)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("ledger: error: Invalid value for '--status'")
    assert "succeeded" in r.stderr and "ledger: hint: " in r.stderr
    res = cli("ls", "--status", "bogus", "-L", str(project / ".ledger"))
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("ledger: error: ")


@pytest.mark.parametrize("status, expected", [("succeeded", 2), ("failed", 0)])
def test_ls_known_status_filters(
    project: Path, cli: Callable[..., Any], status: str, expected: int
) -> None:
    res = cli("ls", "--status", status, "--json", "-L", str(project / ".ledger"))
    assert res.exit_code == 0, res.stderr
    assert len(json.loads(res.stdout)) == expected
