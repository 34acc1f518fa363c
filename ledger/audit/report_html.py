"""A self-contained HTML report: inline CSS and SVG, no scripts, no external resources."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

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
from .plot import claim_svg
from .plot_compare import COMPARISON_LEGEND, comparison_svg

__all__ = ["render_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:60rem;
color:#1a202c;line-height:1.45;padding:0 1rem}
table{border-collapse:collapse;margin:.75rem 0;width:100%}
th,td{border:1px solid #cbd5e0;padding:.3rem .5rem;text-align:left;vertical-align:top;
font-size:.9rem}
th{background:#edf2f7}
code{font-size:.85em}
.v{font-weight:600;padding:.1rem .4rem;border-radius:.25rem;white-space:nowrap}
.supported{background:#c6f6d5}.not_supported{background:#fed7d7}
.inconclusive{background:#fefcbf}.not_reproducible{background:#e9d8fd}.error{background:#fed7d7}
.contradicted{background:#fed7d7}.insufficient{background:#fefcbf}
.FAIL{color:#c53030;font-weight:600}.pass{color:#2f855a}
section.claim{border-top:2px solid #e2e8f0;margin-top:1.5rem}
.legend{font-size:.8rem;color:#4a5568}
"""


def render_html(result: AuditResult, *, diff_href: Callable[[str, str], str] | None = None) -> str:
    """The report; ``diff_href(run, replay)`` is the web view's page of a failed replay
    (the web view passes it; a report read on its own names the command instead)."""
    rec = result.record
    h = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Claim audit {escape(result.id)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Claim audit <code>{escape(result.id)}</code></h1>",
        f"<p>Claims file <code>{escape(rec.claims_path)}</code> "
        f"(<code>{escape(rec.claims_file)}</code>), audited {escape(rec.created.isoformat())} "
        f"with ledger {escape(rec.ledger_version)}.</p>",
        "<table><tr><th>#</th><th>claim</th><th>source</th><th>metric</th><th>claimed</th>"
        "<th>recorded</th><th>verdict</th></tr>",
    ]
    for c in rec.claims:
        h.append(
            "<tr>"
            + "".join(f"<td>{escape(x)}</td>" for x in summary_cells(c))
            + f'<td><span class="v {c.verdict}">{escape(verdict_label(c))}</span></td></tr>'
        )
    h.append("</table>")
    for c in rec.claims:
        h.append(f'<section class="claim" id="claim-{c.index + 1}">')
        h.append(
            f"<h2>{c.index + 1}. {escape(c.id)} "
            f'<span class="v {c.verdict}">{escape(verdict_label(c))}</span></h2>'
        )
        if c.line is not None:
            h.append(f"<p>Claims file line {c.line}.</p>")
        h.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in c.reasons) + "</ul>")
        svg = claim_svg(c)
        if svg:
            h.append(svg)
            h.append(
                '<p class="legend">dots: run values · dark band: the claim as printed '
                "(c ± rounding) · green: region where the 90% CI must lie to support it · "
                "bars: 95% (thin) and 90% (thick) CI of the runs' mean</p>"
            )
        svg = comparison_svg(c)
        if svg:
            h.append(svg)
            h.append(f'<p class="legend">{escape(COMPARISON_LEGEND)}</p>')
        if c.margin is not None:
            h.append(f"<p>Margin δ = {c.margin:.6g} ({escape(c.margin_source or '')}).</p>")
        if c.checks:
            h.append("<table><tr><th>check</th><th>result</th><th>detail</th></tr>")
            for k in c.checks:
                mark = check_mark(k.passed)
                h.append(
                    f'<tr><td>{escape(k.name)}</td><td class="{mark}">{mark}</td>'
                    f"<td>{escape(k.detail)}</td></tr>"
                )
            h.append("</table>")
        if c.runs:
            h.append(
                "<table><tr><th>run</th><th>value</th><th>step</th><th>replay</th>"
                "<th>note</th></tr>"
            )
            for e in c.runs:
                value = "—" if e.value is None else f"{e.value:.6g}"
                used = "" if e.used else " (not used)"
                h.append(
                    f"<tr><td><code>{escape(run_label(e.run_id, e.method, e.task))}</code>"
                    f"{used}</td><td>{value}</td>"
                    f"<td>{'' if e.step is None else e.step}</td>"
                    f"<td>{escape(e.replay_detail or e.replay)}{_link(e)}"
                    "</td>"
                    f"<td>{escape(e.note or '')}</td></tr>"
                )
            h.append("</table>")
        h.append("</section>")
    h += _localizations(result, diff_href)
    h.append("</body></html>\n")
    return "\n".join(h)


def _link(e: RunEvidence) -> str:
    if e.localization is None:
        return ""
    return f' <a href="#{escape(localization_anchor(e.run_id))}">{LOCALIZED_LINK}</a>'


def _localizations(result: AuditResult, diff_href: Callable[[str, str], str] | None) -> list[str]:
    runs = localized_runs(result.record)
    if not runs:
        return []
    h = [f'<section class="claim" id="localizations"><h2>{LOCALIZED_TITLE}</h2>']
    for e in runs:
        loc = e.localization
        if loc is None:
            continue
        replay = loc.replay or "?"
        h.append(f'<div id="{escape(localization_anchor(e.run_id))}">')
        h.append(
            f"<h3>run <code>{escape(e.run_id)}</code>, replay <code>{escape(replay)}</code></h3>"
        )
        h += [f"<p>{escape(line)}</p>" for line in loc.lines]
        if len(loc.traces) == 2:
            a, b = loc.traces
            if diff_href is not None:
                h.append(
                    f'<p><a href="{escape(diff_href(a, b))}">the traces of {escape(a)} and '
                    f"{escape(b)} side by side, module tree drawn</a></p>"
                )
            else:
                h.append(
                    f"<p>The traces side by side: <code>ledger diff {escape(a)} {escape(b)}"
                    "</code>; the web view (<code>ledger ui</code>) draws the module tree.</p>"
                )
        h.append("</div>")
    h.append("</section>")
    return h
