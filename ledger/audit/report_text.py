"""The terminal report: one table row per claim, then each claim's reasons and checks.

Text from the claims file (ids, metric names, paths) and everything built from it goes through
``one_line``: escaped and cut, cells to ``CELL_MAX`` characters, lines of detail to
``LINE_MAX``; ``--json``, ``--markdown`` and ``--html`` keep it whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._units import LINE_MAX, one_line
from ._format import (
    SUMMARY_COLUMNS,
    check_mark,
    summary_cells,
    verdict_label,
)
from .check import AuditResult

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["render_text"]

_COLOURS = {
    "supported": "green",
    "not_supported": "red",
    "contradicted": "red",
    "inconclusive": "yellow",
    "insufficient": "yellow",
    "not_reproducible": "magenta",
    "error": "red",
}


def render_text(result: AuditResult, console: Console, *, details: bool = True) -> None:
    from rich.markup import escape
    from rich.text import Text

    from .._columns import Column, console_width, rich_table

    rec = result.record
    # Plain columns, as `ledger ls` and `ledger checkpoints`: the same in a terminal and a log.
    # Short of width, the source, metric and numbers go, then the claim (its details below say
    # it whole), never the verdict; and
    # no word is broken (``ledger._columns``).
    priority = {"#": 0, "claim": 2, "claimed": 3, "recorded": 4, "metric": 5, "source": 6}
    columns = [Column(c, priority[c]) for c in SUMMARY_COLUMNS] + [Column("verdict", 1)]
    rows: list[list[str | Text]] = [
        [
            *(one_line(x) for x in summary_cells(c)),
            Text(verdict_label(c), style=_COLOURS[c.verdict]),
        ]
        for c in rec.claims
    ]
    table = rich_table(
        columns,
        rows,
        console_width(console),
        title=Text(f"audit {result.id} of {one_line(rec.claims_path, LINE_MAX)}"),
        title_justify="left",
    )
    console.print(table)
    if details:
        for c in rec.claims:
            colour = _COLOURS[c.verdict]
            where = f" (line {c.line})" if c.line else ""
            console.print(
                f"\n[bold]{c.index + 1}. {escape(one_line(c.id))}[/]{where}: "
                f"[{colour}]{escape(verdict_label(c))}[/]"
            )
            for reason in c.reasons:
                console.print(f"  - {escape(one_line(reason, LINE_MAX))}")
            for check in c.checks:
                console.print(
                    f"    {check_mark(check.passed):4} {check.name}: "
                    f"{escape(one_line(check.detail, LINE_MAX))}"
                )
            used = [e for e in c.runs if e.used]
            for method in dict.fromkeys(e.method for e in used):
                shown = ", ".join(
                    f"{e.run_id}={e.value:.6g}" + (f" ({e.task})" if e.task else "")
                    for e in used
                    if e.value is not None and e.method == method
                )
                label = f"runs of {method}" if method else "runs"
                console.print(f"    {escape(label)}: {escape(one_line(shown, LINE_MAX))}")
            for e in c.runs:
                if not e.used and e.note:
                    console.print(
                        f"    skipped {escape(e.run_id)}: {escape(one_line(e.note, LINE_MAX))}"
                    )
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in rec.counts.items())
    console.print(f"\n{len(rec.claims)} claim(s): {counts}. Stored as audits/{result.id}.")
