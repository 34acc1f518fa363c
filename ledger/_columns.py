"""How every table the CLI prints fits a width: which columns stay, and how wide each is.

One rule for ``ls``, ``show``, ``audit``, ``checkpoints`` and any later table:

- Each column has a priority (0 is kept longest). When the table cannot fit, whole columns go,
  the least important first, never the first: ``ls`` at 80 columns keeps id, name, status and
  its key metric, and drops the digests and times. Columns outside the core (priority above
  ``CORE``) go before the text of a core column wraps.
- A column that may wrap (``wrap=True``) wraps at blanks only: it is never narrower than its
  longest word, so ``inconclusive`` is never printed as ``inconclusi`` / ``ve``; columns go
  instead. Only a word wider than the room beside the first column is folded. A column that
  may not wrap (ids, digests, timestamps) keeps its full width or goes.
- The width is ``COLUMNS`` when it is set to a number, on a terminal or not (``COLUMNS=80
  ledger ls | less``), else the terminal's, else unbounded (a pipe or a file: nothing wraps).

rich lays the table out with the widths computed here (``rich_table``); rich is imported only
then.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

__all__ = [
    "UNBOUNDED",
    "Column",
    "columns_of",
    "console_width",
    "env_width",
    "fit",
    "rich_table",
    "stream_width",
]

# The width of a console that is not a terminal's (a pipe, a file): wide enough that nothing
# wraps. ``console_width`` reads it as unbounded.
UNBOUNDED = 100_000
# Priorities up to this one are a table's core (``ls``: id, name, status): every other column
# goes before their text wraps.
CORE = 2
# Blanks a column takes besides its text: rich's Table(box=None) pads one each side.
PAD = 2


@dataclass(frozen=True)
class Column:
    """A table column: its heading, how soon it goes when space runs out (higher goes first),
    whether its text may wrap at blanks, and how it is justified."""

    name: str
    priority: int = 0
    wrap: bool = True
    justify: Literal["left", "right"] = "left"


def columns_of(names: Sequence[str | Column], no_wrap: Collection[int] = ()) -> list[Column]:
    """Columns from headings: a name given as text goes in the order of the table (the
    rightmost first) and wraps unless its index is in ``no_wrap``."""
    return [
        c if isinstance(c, Column) else Column(c, priority=i, wrap=i not in no_wrap)
        for i, c in enumerate(names)
    ]


def console_width(console: Any) -> int | None:
    """The width a rich console's tables fit: its own, or None when it is ``UNBOUNDED``."""
    width = int(console.width)
    return None if width >= UNBOUNDED else width


def env_width() -> int | None:
    """``COLUMNS`` when it holds a positive number, else None."""
    value = os.environ.get("COLUMNS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def stream_width(stream: IO[str]) -> int | None:
    """The width tables printed to ``stream`` fit: ``COLUMNS``, else the terminal's, else None
    (unbounded)."""
    width = env_width()
    if width is not None:
        return width
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return None


def _cell_len(text: str) -> int:
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _plain(cell: str | Text) -> str:
    return cell if isinstance(cell, str) else cell.plain


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    width: int | None,
    core: int = CORE,
) -> list[tuple[int, int]]:
    """(index, width) of each column shown, in order, for a table at most ``width`` cells wide
    (None: unbounded, every column at its natural width). Columns of a priority above ``core``
    go whole before a core column's text wraps."""
    texts = [[_plain(c) for c in row] for row in rows]
    natural: list[int] = []
    longest: list[int] = []
    for i, col in enumerate(columns):
        cells = [col.name, *(row[i] for row in texts)]
        lines = [line for cell in cells for line in cell.split("\n")]
        natural.append(max(_cell_len(line) for line in lines))
        words = [_cell_len(w) for line in lines for w in line.split()] or [0]
        longest.append(max(words) if col.wrap else natural[i])
    # A word is folded only when it is wider than what is left beside the first column.
    room = None if width is None else max(1, width - PAD - (natural[0] + PAD if columns else 0))
    least = [
        min(n, w if i == 0 or room is None else min(w, room))
        for i, (n, w) in enumerate(zip(natural, longest, strict=True))
    ]
    kept = list(range(len(columns)))
    if width is None:
        return [(i, natural[i]) for i in kept]

    def total(widths: dict[int, int]) -> int:
        return sum(widths[i] + PAD for i in kept)

    def natural_of(indices: list[int]) -> dict[int, int]:
        return {i: natural[i] for i in indices}

    # Least important first, the rightmost of equals first; the first column always stays.
    order = sorted(kept[1:], key=lambda i: (columns[i].priority, i), reverse=True)
    # Columns outside the core go whole before any text wraps; then core columns wrap at
    # blanks; only then do core columns go.
    while order and columns[order[0]].priority > core and total(natural_of(kept)) > width:
        kept.remove(order.pop(0))
    while order and total({i: least[i] for i in kept}) > width:
        kept.remove(order.pop(0))
    widths = {i: natural[i] for i in kept}
    excess = total(widths) - width
    while excess > 0:
        shrinkable = [i for i in kept if widths[i] > least[i]]
        if not shrinkable:
            break  # the first column alone is wider than the width: the terminal wraps it
        widest = max(shrinkable, key=lambda i: (widths[i], i))
        widths[widest] -= 1
        excess -= 1
    return [(i, widths[i]) for i in kept]


def rich_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    width: int | None,
    *,
    title: str | Text | None = None,
    **options: Any,
) -> Table:
    """A rich ``Table(box=None)`` of the columns ``fit`` keeps at ``width``, each as wide as it
    says; cells given as ``str`` are literal text, never markup."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, box=None, **options)
    shown = fit(columns, rows, width)
    for i, w in shown:
        col = columns[i]
        table.add_column(
            Text(col.name),
            justify=col.justify,
            no_wrap=not col.wrap,
            overflow="fold",  # only a word longer than the cap of ``fit`` is ever folded
            width=None if width is None else w,
        )
    for row in rows:
        cells = [row[i] for i, _ in shown]
        table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))
    return table
