"""Text and Markdown/HTML renderings of check and gate records (no torch)."""

from __future__ import annotations

import html
from typing import Any

from .._units import LINE_MAX, one_line
from ..records.check import CheckItem

__all__ = ["item_line", "render_html", "render_markdown"]


def _mark(item: CheckItem) -> str:
    if item.passed is None:
        return "skip"
    if item.passed:
        return "pass"
    return "FAIL" if item.required else "warn"


def item_line(item: CheckItem) -> str:
    """One line on the terminal; names and figures come from the user's spec: escaped, cut."""
    return f"{_mark(item):4}  {one_line(f'{item.level}/{item.name}: {item.figure}', LINE_MAX)}"


def _title(rec: Any) -> tuple[str, list[str]]:
    if rec.kind == "gate":
        head = [
            f"Checkpoint: `{rec.checkpoint}` ({rec.checkpoint_source}, "
            f"digest `{rec.checkpoint_digest}`)",
            f"Spec: `{rec.spec}`",
        ]
        if rec.run_id:
            head.append(f"Run: `{rec.run_id}`, step {rec.step}")
        return f"Delivery gate {rec.gate_id}", head
    head = [f"Spec: `{rec.spec}`", f"Levels: {', '.join(rec.levels)}"]
    if rec.run_id:
        head.append(f"Run: `{rec.run_id}`")
    if rec.stopped_at:
        head.append(f"Stopped at the first failing level: {rec.stopped_at}")
    return f"Check {rec.check_id}", head


def _failing_samples(item: CheckItem) -> str:
    d = item.detail
    bits = []
    for key in (
        "worst_sample",
        "first_position",
        "no_gradient",
        "nonfinite",
        "operators",
        "first_bad_step",
        "mismatched",
        "error",
    ):
        if d.get(key) not in (None, [], ""):
            bits.append(f"{key.replace('_', ' ')}: {d[key]}")
    return "; ".join(str(b) for b in bits)


def render_markdown(rec: Any) -> str:
    title, head = _title(rec)
    verdict = "PASSED" if rec.passed else "FAILED"
    lines = [
        f"# {title}: {verdict}",
        "",
        *[f"- {h}" for h in head],
        f"- Created: {rec.created.isoformat()}",
        "",
    ]
    lines += ["| result | check | figure | failing samples |", "|---|---|---|---|"]
    for i in rec.items:
        cells = [
            _mark(i),
            f"{i.level}/{i.name}",
            i.figure,
            _failing_samples(i) if i.passed is False else "",
        ]
        lines.append(
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
        )
    lines.append("")
    return "\n".join(lines)


def render_html(rec: Any) -> str:
    title, head = _title(rec)
    verdict = "PASSED" if rec.passed else "FAILED"
    rows = "".join(
        f"<tr class='{_mark(i).lower()}'><td>{_mark(i)}</td>"
        f"<td>{html.escape(i.level + '/' + i.name)}</td><td>{html.escape(i.figure)}</td>"
        f"<td>{html.escape(_failing_samples(i) if i.passed is False else '')}</td></tr>"
        for i in rec.items
    )
    items = "".join(f"<li>{html.escape(h.replace('`', ''))}</li>" for h in head)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;max-width:72em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}"
        "tr.fail td:first-child{color:#b00;font-weight:bold}tr.pass td:first-child{color:#070}"
        "</style></head><body>"
        f"<h1>{html.escape(title)}: {verdict}</h1>"
        f"<ul>{items}<li>Created: {rec.created.isoformat()}</li></ul>"
        "<table><tr><th>result</th><th>check</th><th>figure</th><th>failing samples</th></tr>"
        f"{rows}</table></body></html>\n"
    )
