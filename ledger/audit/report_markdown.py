"""The Markdown report: a summary table and one section per claim, to paste into a review."""

from __future__ import annotations

from ._format import (
    check_mark,
    run_label,
    summary_cells,
    verdict_label,
)
from .check import AuditResult

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: AuditResult) -> str:
    rec = result.record
    out = [
        f"# Claim audit `{result.id}`",
        "",
        f"Claims file `{rec.claims_path}` (`{rec.claims_file}`), "
        f"audited {rec.created.isoformat()} with ledger {rec.ledger_version}.",
        "",
        "| # | claim | source | metric | claimed | recorded | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in rec.claims:
        cells = [*summary_cells(c), f"**{verdict_label(c)}**"]
        out.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    for c in rec.claims:
        out += ["", f"## {c.index + 1}. {c.id}: {verdict_label(c)}", ""]
        if c.line is not None:
            out.append(f"Claims file line {c.line}.")
            out.append("")
        out += [f"- {r}" for r in c.reasons]
        if c.margin is not None:
            out.append(f"- margin δ = {c.margin:.6g} ({c.margin_source})")
        if c.varied_sources:
            out.append("- varied between runs: " + ", ".join(c.varied_sources))
        if c.checks:
            out += ["", "| check | result | detail |", "|---|---|---|"]
            out += [f"| {k.name} | {check_mark(k.passed)} | {_cell(k.detail)} |" for k in c.checks]
        if c.runs:
            out += ["", "| run | value | step | replay | note |", "|---|---|---|---|---|"]
            for e in c.runs:
                value = "—" if e.value is None else f"{e.value:.6g}"
                used = "" if e.used else " (not used)"
                out.append(
                    f"| `{run_label(e.run_id, e.method, e.task)}`{used} | {value} | "
                    f"{'' if e.step is None else e.step} | "
                    f"{_cell(e.replay_detail or e.replay)} | {_cell(e.note or '')} |"
                )
    out.append("")
    return "\n".join(out)
