"""The plain printer (ledger/cli/_printer.py) writes, without rich, exactly what the rich console
the CLI uses off a terminal (``_output.console``) prints for the same lines and tables."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.cli import _output
from ledger.cli._printer import PlainPrinter, RichPrinter, expand_tabs, plain_table

AWKWARD = [
    "",
    "plain",
    "[bold]not markup[/]",
    "[/]",
    "a\\[b]",
    ":smile: :thumbs_up:",
    "中文名字",
    "emoji 🙂 and 👩‍👩‍👧 family",
    "e\u0301 combining",
    "zero\u200bwidth",
    "ｆｕｌｌｗｉｄｔｈ",
    "right-to-left עברית",
    "ctrl \x1b[31mred\x1b[0m \x07 \x9b",
    "trailing blanks   ",
    "   leading",
    "\u00a0nbsp\u00a0",
    "↳ 1a2b3c",
]

# Text as a user may write it: any character a UTF-8 stream can carry.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def _through(fn: Callable[[], None]) -> str:
    """What ``fn`` writes to a stdout that is not a terminal."""
    buf = io.StringIO()
    real, sys.stdout = sys.stdout, buf
    try:
        fn()
    finally:
        sys.stdout = real
    return buf.getvalue()


def _rich_table(cols: Sequence[str], rows: Sequence[Sequence[str]], title: str | None) -> str:
    return _through(lambda: RichPrinter(_output.console()).table(cols, rows, title=title))


def _plain_table(cols: Sequence[str], rows: Sequence[Sequence[str]], title: str | None) -> str:
    return _through(lambda: PlainPrinter(sys.stdout).table(cols, rows, title=title))


def _rich_line(*parts: str | tuple[str, str]) -> str:
    return _through(lambda: RichPrinter(_output.console()).line(*parts))


def _plain_line(*parts: str | tuple[str, str]) -> str:
    return _through(lambda: PlainPrinter(sys.stdout).line(*parts))


@pytest.mark.parametrize("text", AWKWARD)
def test_a_table_of_awkward_cells_matches_rich(text: str) -> None:
    cols = ["id", "name", text or "empty"]
    rows = [["a1", text, "x"], [text, "", text + text], ["", "", ""]]
    for title in (None, "metrics"):
        assert _plain_table(cols, rows, title) == _rich_table(cols, rows, title)


@pytest.mark.parametrize("text", [*AWKWARD, "tab\there", "\tlead", "a\tb\tc 中\t|", "two\nlines"])
def test_a_line_of_awkward_text_matches_rich(text: str) -> None:
    assert _plain_line("  name      ", text) == _rich_line("  name      ", text)
    assert _plain_line((text, "bold"), "  ", (text, "red")) == _rich_line(
        (text, "bold"), "  ", (text, "red")
    )


def test_an_empty_table_is_its_header() -> None:
    assert _plain_table(["id", "name"], [], None) == _rich_table(["id", "name"], [], None)
    assert _plain_table(["id", "name"], [], None) == " id  name\n"


def test_tables_rich_would_lay_out_otherwise_are_left_to_rich() -> None:
    assert plain_table(["a"], [["x\ty"]]) is None
    assert plain_table(["a"], [["x\ny"]]) is None
    wide = [["x" * 60_000, "y" * 60_000]]
    assert plain_table(["a", "b"], wide) is None
    # ... and the plain printer then prints what rich prints.
    assert _plain_table(["a"], [["x\ty"]], None) == _rich_table(["a"], [["x\ty"]], None)


def test_tabs_expand_to_the_next_stop_in_cells() -> None:
    assert expand_tabs("a\tb") == "a       b"
    assert expand_tabs("abcdefg\tx") == "abcdefg x"
    assert expand_tabs("abcdefgh\tx") == "abcdefgh        x"
    assert expand_tabs("中\tx") == "中      x"  # two cells wide


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(TEXT, min_size=3, max_size=3), max_size=4),
    st.lists(TEXT, min_size=3, max_size=3),
)
def test_any_table_of_one_line_cells_matches_rich(rows: list[list[str]], header: list[str]) -> None:
    rows = [[c.replace("\n", "").replace("\t", "") for c in row] for row in rows]
    header = [c.replace("\n", "").replace("\t", "") for c in header]
    assert _plain_table(header, rows, None) == _rich_table(header, rows, None)


@settings(max_examples=150, deadline=None)
@given(TEXT, TEXT)
def test_any_line_matches_rich(a: str, b: str) -> None:
    assert _plain_line(a, (b, "green")) == _rich_line(a, (b, "green"))
