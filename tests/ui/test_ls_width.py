"""``ledger ls`` at the width a person has: a real 80-column pseudo-terminal, and ``COLUMNS``
on a pipe. Columns go whole, the least important first (digests and times before the id, name,
status and key metric), and no name or status is cut (``ledger._columns``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pty import run_on_pty
from _support import run_ledger
from _ui_lab import add_run

from ledger.store import Store

NAMES = ["relu-wide-net-lr0.01", "relu-wide-net-lr0.003", "gelu-deep-net-dropout0.1"]


@pytest.fixture
def ledger_dir(tmp_path: Path) -> Path:
    store = Store.init(tmp_path / ".ledger")
    for i, name in enumerate(NAMES):
        add_run(
            store,
            f"20261130T0600{i:02d}.000000Z-0000abc{i}",
            {"loss": [(0, 2.0), (1, 0.5 + i / 100)], "val/acc": [(1, 0.7)]},
            name=name,
            tags={"sweep": "20261130T055900.000000Z-4363ec7a", "team": "vision"},
            minute=i,
        )
    return tmp_path


def _table(lines: list[str]) -> list[str]:
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("id "))
    return [ln for ln in lines[start:] if ln.strip()]


def test_ls_at_an_80_column_terminal_keeps_what_matters_whole(ledger_dir: Path) -> None:
    code, lines = run_on_pty("ls", cwd=ledger_dir, columns=80)
    assert code == 0, lines
    table = _table(lines)
    assert all(len(ln) <= 80 for ln in table), table
    header = table[0].split()
    assert header[:4] == ["id", "name", "status", "loss"], header
    # Times and digests went first; the id, name, status and key metric stayed.
    assert "contract" not in header and "started" not in header
    body = "\n".join(table[1:])
    for name in NAMES:
        assert name in body.split(), (name, table)  # whole, never "relu-…"
    assert body.count("succeeded") == 3 and "…" not in body
    assert "0.5" in body.split() and "0.52" in body.split()  # the key metric's last value


def test_ls_at_a_wide_terminal_shows_every_column(ledger_dir: Path) -> None:
    code, lines = run_on_pty("ls", cwd=ledger_dir, columns=240)
    assert code == 0, lines
    header = _table(lines)[0].split()
    assert header == [
        "id",
        "name",
        "status",
        "loss",
        "exit",
        "started",
        "wall",
        "s",
        "contract",
        "tags",
    ]


def test_columns_is_honoured_on_a_pipe(ledger_dir: Path) -> None:
    r = run_ledger("ls", cwd=ledger_dir, COLUMNS="80")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(ln) <= 80 for ln in lines), lines
    assert lines[0].split()[:4] == ["id", "name", "status", "loss"]
    assert all(name in r.stdout.split() for name in NAMES)
    # Not set: a pipe or a file gets every column, unwrapped (a log keeps the digests).
    env_free = run_ledger("ls", cwd=ledger_dir, COLUMNS="")
    assert "contract" in env_free.stdout.splitlines()[0]
    assert max(len(ln) for ln in env_free.stdout.splitlines()) > 80


def test_columns_narrower_than_a_word_wraps_at_blanks_only(ledger_dir: Path) -> None:
    r = run_ledger("ls", cwd=ledger_dir, COLUMNS="40")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # The status goes rather than a name being cut.
    assert lines[0].split() == ["id", "name"]
    assert all(len(ln) <= 40 for ln in lines), lines
    assert all(name in r.stdout.split() for name in NAMES)
