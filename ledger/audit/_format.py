"""Short texts shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations

from typing import Any

from ..records.audit import Audit, ClaimAudit, RunEvidence

VERDICT_LABELS = {
    "supported": "supported",
    "not_supported": "not supported",
    "contradicted": "contradicted",
    "inconclusive": "inconclusive",
    "insufficient": "insufficient",
    "not_reproducible": "not reproducible",
    "error": "error",
}


def verdict_label(c: ClaimAudit) -> str:
    label = VERDICT_LABELS[c.verdict]
    if c.exceeds:
        label += " (exceeds)"
    if c.verdict == "inconclusive" and c.seeds_needed is not None:
        label += f" (~{c.seeds_needed} seeds)"
    needs = c.statistics.get("needs")
    if c.verdict == "error" and isinstance(needs, str):
        label += f" ({needs})"
    return label


def is_comparison(c: ClaimAudit) -> bool:
    return c.claim is not None and c.claim.get("kind") == "comparison"


def _comparison_claimed(claim: dict[str, Any]) -> str:
    text = f"{claim['a']} {claim['direction']} than {claim['b']}"
    if claim.get("difference") is not None:
        d = claim.get("difference_decimals")
        diff = float(claim["difference"])
        text += f" by {diff:+.{int(d)}f}" if d is not None else f" by {diff:+g}"
    if claim.get("task_tag"):
        tasks = claim.get("tasks") or []
        text += f", {len(tasks) or 'all'} tasks ({claim['aggregate']})"
    return text


def _comparison_recorded(c: ClaimAudit) -> str:
    r: dict[str, Any] | None = c.statistics.get("comparison")
    if not r:
        return "—"
    if r.get("difference") is None:
        return f"n={r['n_a']}/{r['n_b']}"
    lo, hi = r["difference_ci"]
    diff = f"Δ {float(r['difference']):.4g} [{float(lo):.4g}, {float(hi):.4g}]"
    return f"{diff}, n={r['n_a']}/{r['n_b']}"


def run_label(run_id: str, method: str | None, task: str | None) -> str:
    """A run as the reports list it: its id, and for comparisons its method and task."""
    extra = ", ".join(x for x in (method, task) if x)
    return f"{run_id} ({extra})" if extra else run_id


def claimed_text(c: ClaimAudit) -> str:
    claim = c.claim
    if claim is None:
        return "—"
    if is_comparison(c):
        return _comparison_claimed(claim)
    d = int(claim["decimals"])
    for side in ("below", "above"):
        if claim.get(side) is not None:
            n = claim.get("n_seeds")
            return f"{side} {float(claim[side]):g}" + (f", n={n}" if n is not None else "")
    text = f"{float(claim['value']):.{d}f}"
    if claim.get("spread") is not None:
        sd = claim.get("spread_decimals")
        sd = d if sd is None else int(sd)
        kind = claim.get("spread_type")
        if kind == "ci":
            kind = f"{round(float(claim['level']) * 100):g}% CI"
        text += f" ± {float(claim['spread']):.{sd}f} ({kind})"
    n = claim.get("n_seeds")
    text += f", n={n}" if n is not None else ", n=?"
    return text


def recorded_text(c: ClaimAudit) -> str:
    if is_comparison(c):
        return _comparison_recorded(c)
    summary: dict[str, Any] | None = c.statistics.get("summary")
    if not summary:
        return "—"
    d = int(c.claim["decimals"]) + 2 if c.claim else 4
    std = summary.get("std")
    spread = f" ± {float(std):.{d}f} (std)" if isinstance(std, float) else ""
    return f"{float(summary['mean']):.{d}f}{spread}, n={summary['n']}"


def source_text(c: ClaimAudit) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.source.items()) or "—"


def metric_text(c: ClaimAudit) -> str:
    claim = c.claim
    if claim is None:
        return "—"
    parts = [str(claim["metric"])]
    if claim.get("split"):
        parts.append(str(claim["split"]))
    if claim.get("checkpoint") != "final":
        parts.append(str(claim["checkpoint"]))
    return " · ".join(parts)


def check_mark(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "n/a"}[passed]


SUMMARY_COLUMNS = ("#", "claim", "source", "metric", "claimed", "recorded")


def summary_cells(c: ClaimAudit) -> list[str]:
    """The plain-text cells of a claim's summary row (the verdict cell is styled per report)."""
    return [
        str(c.index + 1),
        c.id,
        source_text(c),
        metric_text(c),
        claimed_text(c),
        recorded_text(c),
    ]


LOCALIZED_TITLE = "Where the failed replays diverged"
LOCALIZED_LINK = "where it diverged"


def localization_anchor(run_id: str) -> str:
    """The id of a run's localization section: the runs tables link to it."""
    return f"localization-{run_id}"


def localized_runs(rec: Audit) -> list[RunEvidence]:
    """Each run (once) whose replay failed and was localized, in the order the claims name it."""
    seen: dict[str, RunEvidence] = {}
    for c in rec.claims:
        for e in c.runs:
            if e.localization and e.run_id not in seen:
                seen[e.run_id] = e
    return list(seen.values())
