"""Lines and tables of ``ls`` and ``show``: rich on a terminal, plain text written here elsewhere.

Piped, redirected or captured, the console of ``_output.console`` prints no style, never wraps
and drops trailing blanks, so its text is a function of the cells alone. ``PlainPrinter`` writes
that text itself, byte for byte, without importing rich (about 40 ms a start, more than a page
of ``ledger ls`` costs to find): column widths are rich's cell widths (``rich.cells`` is loaded
only for text that is not ASCII), cells are padded one blank each side, tabs expand as rich
expands them. A table whose lines would be wider than that console is drawn by rich.
tests/cli/test_cli_printer.py compares the two on awkward text.

Text handed to a printer is literal: never rich markup, so a name holding ``[bold]`` is shown
as written.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from typing import IO, TYPE_CHECKING

from .._columns import Column, columns_of, stream_width
from .._units import CONTROLS
from ._output import _UNWRAPPED, is_tty, strip_trailing_blanks, visible

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Part", "PlainPrinter", "RichPrinter", "printer"]

# A piece of a line: its text, or (text, rich style) for a terminal (``ledger.run.show.Part``).
Part = str | tuple[str, str]
# rich drops these from any text it is given (``rich.control.STRIP_CONTROL_CODES``: BEL, BS,
# VT, FF, CR) before the console escapes the other control characters.
_DROPPED = dict.fromkeys([7, 8, 11, 12, 13])


def printer(stream: IO[str] | None = None) -> PlainPrinter | RichPrinter:
    """The printer for ``stream`` (stdout): rich's on a terminal, else the plain one."""
    stream = stream or sys.stdout
    if is_tty(stream):
        from ._output import console

        return RichPrinter(console(stderr=stream is sys.stderr))
    return PlainPrinter(stream)


def cell_len(text: str) -> int:
    """Terminal cells ``text`` takes, as rich counts them."""
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def expand_tabs(line: str, tab_size: int = 8) -> str:
    """``line`` (no newline) with each tab a blank padded to the next multiple of
    ``tab_size`` cells: rich's ``Text.expand_tabs``."""
    if "\t" not in line:
        return line
    out: list[str] = []
    position = 0
    for part in line.split("\t")[:-1]:
        position += cell_len(part) + 1
        spaces = -position % tab_size
        position += spaces
        out.append(part + " " * (1 + spaces))
    out.append(line.rsplit("\t", 1)[1])
    return "".join(out)


def plain_text(text: str) -> str:
    """What the console prints for the literal ``text``: lines, tabs expanded, control
    characters escaped, no trailing blanks, a final newline."""
    lines = (expand_tabs(line) for line in text.translate(_DROPPED).split("\n"))
    return strip_trailing_blanks(visible("\n".join(lines))) + "\n"


def plain_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    title: str | None = None,
    width: int | None = None,
) -> str | None:
    """What the console prints for a ``Table(box=None)`` of these one-line cells, or None where
    rich would lay it out otherwise (a cell holding a control character, such as a newline or
    tab, which callers escape with ``one_line``; lines wider than ``width``, ``COLUMNS``, or
    the console)."""
    cells = [[c.translate(_DROPPED) for c in row] for row in [columns, *rows]]
    if any(CONTROLS.search(c) for row in cells for c in row):
        return None  # a newline or tab (rich lays them out), a control rich counts 0 cells
    lens = [[cell_len(c) for c in row] for row in cells]
    widths = [max(row[i] for row in lens) for i in range(len(columns))]
    if sum(widths) + 2 * len(widths) > min(width or _UNWRAPPED, _UNWRAPPED):
        return None  # rich drops and wraps columns to fit (``ledger._columns``)
    out = [] if title is None else [plain_text(title)]
    for row, row_lens in zip(cells, lens, strict=True):
        line = "".join(
            f" {c}{' ' * (w - n)} " for c, n, w in zip(row, row_lens, widths, strict=True)
        )
        out.append(strip_trailing_blanks(visible(line)) + "\n")
    return "".join(out)


class PlainPrinter:
    """Writes what ``_output.console`` would print on a stream that is not a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def line(self, *parts: Part) -> None:
        self.stream.write(plain_text("".join(p if isinstance(p, str) else p[0] for p in parts)))

    def table(
        self,
        columns: Sequence[str | Column],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None = None,
        no_wrap: Collection[int] = (),
    ) -> None:
        names = [c if isinstance(c, str) else c.name for c in columns]
        text = plain_table(names, rows, title, stream_width(self.stream))
        if text is None:
            from ._output import console

            RichPrinter(console(stderr=self.stream is sys.stderr)).table(
                columns, rows, title=title, no_wrap=no_wrap
            )
            return
        self.stream.write(text)


class RichPrinter:
    """Prints through a rich console: styles and tables sized to a terminal."""

    def __init__(self, con: Console) -> None:
        self.con = con

    def line(self, *parts: Part) -> None:
        from rich.text import Text

        self.con.print(Text.assemble(*parts))

    def table(
        self,
        columns: Sequence[str | Column],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None = None,
        no_wrap: Collection[int] = (),
    ) -> None:
        """Columns that do not fit the console go, the least important first; the others wrap
        at blanks only (``ledger._columns``). ``no_wrap``: indices of columns given by name
        that must not wrap (ids, digests, times)."""
        from rich.text import Text

        from .._columns import console_width, rich_table

        # Cells are data, never markup: rich_table makes each a Text.
        title_text = None if title is None else Text(title)
        self.con.print(
            rich_table(
                columns_of(columns, no_wrap), rows, console_width(self.con), title=title_text
            )
        )
