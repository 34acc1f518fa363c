"""The Markdown report: a summary table and one section per claim, to paste into a review."""

from __future__ import annotations

from ..records.audit import RunEvidence
from ._format import (
    LOCALIZED_LINK,
    LOCALIZED_TITLE,
    check_mark,
    localization_anchor,
    localized_runs,
    run_label,
    summary_cells,
    verdict_label,
)
from .check import AuditResult

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _link(e: RunEvidence) -> str:
    return f" [{LOCALIZED_LINK}](#{localization_anchor(e.run_id)})" if e.localization else ""


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
                    f"{_cell(e.replay_detail or e.replay)}{_link(e)} | "
                    f"{_cell(e.note or '')} |"
                )
    runs = localized_runs(rec)
    if runs:
        out += ["", f"## {LOCALIZED_TITLE}"]
    for e in runs:
        if e.localization is None:
            continue
        out += ["", f'<a id="{localization_anchor(e.run_id)}"></a>', ""]
        out += [f"### run `{e.run_id}`, replay `{e.localization.replay or '?'}`", ""]
        out += [f"- {_cell(line)}" for line in e.localization.lines]
        if len(e.localization.traces) == 2:
            a, b = e.localization.traces
            out.append(f"- the traces side by side: `ledger diff {a} {b}`")
    out.append("")
    return "\n".join(out)
