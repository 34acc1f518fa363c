"""``ledger._columns``: the one rule every table fits a width by. Whole columns go, the least
important first; what stays wraps at blanks only; the widths it gives are what rich prints."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ledger._columns import Column, columns_of, fit, rich_table

COLS = [
    Column("id", 0, wrap=False),
    Column("name", 1),
    Column("status", 2, wrap=False),
    Column("started", 8, wrap=False),
    Column("contract", 9, wrap=False),
    Column("tags", 4),
]
ROWS = [
    ["af60af", "relu wide net", "inconclusive", "2026-11-30T06:00:00", "efc1c3683c09", "a=1 b=2"],
    ["6ee2a9", "gelu", "succeeded", "2026-11-30T06:01:00", "0c1dd3683c09", "team=vision"],
]


def _render(width: int) -> list[str]:
    out = io.StringIO()
    con = Console(file=out, width=width, no_color=True, highlight=False)
    con.print(rich_table(COLS, ROWS, width))
    return out.getvalue().splitlines()


def test_unbounded_keeps_every_column_at_its_natural_width() -> None:
    assert fit(COLS, ROWS, None) == [(0, 6), (1, 13), (2, 12), (3, 19), (4, 12), (5, 11)]


def test_columns_go_least_important_first() -> None:
    kept = [COLS[i].name for i, _ in fit(COLS, ROWS, 80)]
    assert kept == ["id", "name", "status", "started", "tags"]  # the digest went first
    kept = [COLS[i].name for i, _ in fit(COLS, ROWS, 60)]
    assert kept == ["id", "name", "status", "tags"]
    # The core (id, name, status) stays while the name can wrap at blanks: "relu wide" / "net".
    shown = fit(COLS, ROWS, 30)
    assert [(COLS[i].name, w) for i, w in shown] == [("id", 6), ("name", 6), ("status", 12)]


# From 20: below, "inconclusive" is wider than the room beside the id, and folds.
@pytest.mark.parametrize("width", range(20, 120, 3))
def test_no_word_is_ever_broken_and_no_line_is_too_wide(width: int) -> None:
    lines = _render(width)
    assert all(len(ln.rstrip()) <= width for ln in lines), lines
    words = {w for ln in lines for w in ln.split()}
    cells = {w for row in ROWS for cell in row for w in cell.split()} | {c.name for c in COLS}
    assert words <= cells, (width, sorted(words - cells))


def test_names_given_as_text_go_right_to_left() -> None:
    cols = columns_of(["id", "a", "b"], no_wrap=[0])
    assert [(c.priority, c.wrap) for c in cols] == [(0, False), (1, True), (2, True)]
