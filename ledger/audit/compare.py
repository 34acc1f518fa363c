"""A comparative claim ("A beats B") against the runs of both methods.

Each method is a named run selector (the claims file's ``methods``); a run's value is taken as
for any claim (final or best checkpoint). With ``task_tag`` the runs are grouped by that tag and
the claim is judged over all tasks at once (IQM, stratified bootstrap). The statistics and the
verdict rules are :mod:`ledger.stats.comparison`'s; this module collects the values and words
the evidence. Precedence: ``insufficient`` (too few runs), then ``contradicted``, then
``not_reproducible`` (a run behind the claim failed its own replay), then the statistical
verdict.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..records.audit import AuditCheck, ClaimAudit, ClaimVerdictName, RunEvidence
from .claims import ComparisonClaim
from .context import AuditContext, _replay_check, evidence_of
from .select import RecordedRun, run_value, select_runs

if TYPE_CHECKING:
    from ..stats import ComparisonResult

__all__ = ["evaluate_comparison"]


def evaluate_comparison(
    claim: ComparisonClaim, head: dict[str, Any], ctx: AuditContext
) -> ClaimAudit:
    from ..stats import compare_methods, compare_tasks

    evidence: list[RunEvidence] = []
    for name in (claim.a, claim.b):
        selector = ctx.methods[name]
        selected = select_runs(ctx.runs, selector)
        if not selected:
            return _error(
                head,
                f"no recorded run matches method {name!r} ({selector.describe()}; "
                f"{len(ctx.runs)} run(s) in the ledger)",
                evidence,
            )
        if not any(any(m.name == claim.metric for m in r.run.metrics) for r in selected):
            have = sorted({m.name for r in selected for m in r.run.metrics})
            return _error(
                head,
                f"unknown metric {claim.metric!r}: the {len(selected)} run(s) of method "
                f"{name!r} record " + (", ".join(have) or "no metrics"),
                evidence,
            )
        include = claim.include_replays or selector.include_replays
        evidence.extend(_collect(ctx, claim, name, selected, include))
    head["runs"] = evidence
    both = sorted(
        {e.run_id for e in evidence if e.method == claim.a}
        & {e.run_id for e in evidence if e.method == claim.b}
    )
    if both:
        shown = ", ".join(both[:3]) + (", ..." if len(both) > 3 else "")
        return _error(
            head,
            f"methods {claim.a!r} and {claim.b!r} select the same {len(both)} run(s) ({shown}); "
            "a run can stand for one method only: narrow the selectors in `methods`",
        )
    values = {
        name: [e for e in evidence if e.method == name and e.used] for name in (claim.a, claim.b)
    }
    try:
        if claim.task_tag is None:
            result = compare_methods(
                [_value(e) for e in values[claim.a]],
                [_value(e) for e in values[claim.b]],
                **_common(claim),
            )
        else:
            tasks = claim.tasks or sorted({e.task for e in evidence if e.used and e.task})
            missing = [t for t in tasks if claim.normalize and t not in claim.normalize]
            if missing:
                return _error(
                    head, f"normalize gives no [low, high] for task(s) {', '.join(missing)}"
                )
            grouped = {
                name: {
                    t: [_scaled(claim, t, _value(e)) for e in values[name] if e.task == t]
                    for t in tasks
                }
                for name in (claim.a, claim.b)
            }
            if not tasks:
                return _error(head, f"no run of either method has the task tag {claim.task_tag!r}")
            result = compare_tasks(
                grouped[claim.a], grouped[claim.b], aggregate=claim.aggregate, **_common(claim)
            )
    except ValueError as e:
        return _error(head, f"cannot evaluate: {e}")
    check = _replay_check_for(evidence)
    verdict: ClaimVerdictName = result.verdict
    reasons = [result.reason]
    if result.verdict in ("supported", "inconclusive") and check.passed is False:
        verdict = "not_reproducible"
        reasons.insert(0, f"runs behind the claim did not reproduce ({check.detail})")
    reasons.extend(evidence_lines(claim, result))
    if result.seeds_needed is not None:
        reasons.append(
            f"about {result.seeds_needed} runs per method"
            + (" and task" if claim.task_tag else "")
            + f" would settle it (80% power, {result.seeds_needed_basis})"
        )
    stats = {"comparison": result.to_json(), "methods": {"a": claim.a, "b": claim.b}}
    return ClaimAudit(
        **head,
        verdict=verdict,
        reasons=reasons,
        checks=[check],
        statistics=stats,
        seeds_needed=result.seeds_needed if verdict == "inconclusive" else None,
    )


def _common(claim: ComparisonClaim) -> dict[str, Any]:
    return {
        "higher_is_better": claim.higher_is_better,
        "direction": claim.direction,
        "difference": claim.difference,
        "difference_decimals": claim.difference_decimals,
        "alpha": claim.alpha,
        "labels": (claim.a, claim.b),
    }


def _value(e: RunEvidence) -> float:
    if e.value is None:
        raise ValueError(f"run {e.run_id} has no value to compare")
    return e.value


def _scaled(claim: ComparisonClaim, task: str, value: float) -> float:
    if task not in claim.normalize:
        return value
    low, high = claim.normalize[task]
    return (value - low) / (high - low)


def _collect(
    ctx: AuditContext,
    claim: ComparisonClaim,
    method: str,
    selected: list[RecordedRun],
    include_replays: bool,
) -> list[RunEvidence]:
    out = []
    for r in selected:
        run = r.run
        note: str | None = None
        value = step = None
        task = run.tags.get(claim.task_tag) if claim.task_tag else None
        if run.replay_of and not include_replays:
            note = f"a replay of {run.replay_of}, not a seed (set include_replays)"
        elif run.status != "succeeded":
            note = f"run {run.status}; only succeeded runs are used"
        elif claim.task_tag and task is None:
            note = f"no tag {claim.task_tag!r}, so no task"
        elif claim.tasks and task not in claim.tasks:
            note = f"task {task!r} is not among the claim's tasks"
        else:
            got = run_value(ctx.store, claim, run)
            value, step, note = got.value, got.step, got.note
        used = value is not None and math.isfinite(value)
        out.append(
            evidence_of(
                ctx,
                r.run_id,
                r.oid,
                run,
                value=value,
                step=step,
                used=used,
                note=note,
                method=method,
                task=task,
            )
        )
    return out


def _replay_check_for(evidence: list[RunEvidence]) -> AuditCheck:

    return _replay_check(evidence)


def evidence_lines(claim: ComparisonClaim, r: ComparisonResult) -> list[str]:
    """The numbers behind a comparative verdict, one line each, as the reports print them."""
    a, b = claim.a, claim.b
    if r.verdict == "insufficient" or r.difference is None or r.difference_ci is None:
        return [f"runs with a value: {a} {r.n_a}, {b} {r.n_b}"]
    pct = f"{100 * (1 - r.alpha):g}%"
    lo, hi = r.difference_ci
    lines = []
    if claim.task_tag is None:
        lines.append(
            f"difference {a} − {b} = {r.difference:.4g} (mean {r.aggregate_a:.6g} vs "
            f"{r.aggregate_b:.6g}, n = {r.n_a} vs {r.n_b}); {pct} Welch CI [{lo:.4g}, {hi:.4g}]"
        )
    else:
        lines.append(
            f"{r.aggregate.upper() if r.aggregate == 'iqm' else 'mean'} over {len(r.tasks)} "
            f"tasks: {a} {r.aggregate_a:.6g} (n = {r.n_a}) vs {b} {r.aggregate_b:.6g} "
            f"(n = {r.n_b}); difference {r.difference:.4g}, {pct} stratified bootstrap CI "
            f"[{lo:.4g}, {hi:.4g}] ({r.n_resamples} resamples, seed {r.seed})"
        )
    if r.claimed_interval is not None:
        lines.append(
            f"claimed difference {claim.difference:g} (with rounding {r.claimed_interval[0]:.6g} "
            f"to {r.claimed_interval[1]:.6g})"
        )
    if r.welch is not None:
        w = r.welch
        one = w.p_greater if _claimed_up(claim) else w.p_less
        lines.append(
            f"Welch t = {w.t:.4g}, df = {w.df:.4g}, p = {w.p_two_sided:.3g} (two-sided; "
            f"{one:.3g} one-sided in the claimed direction)"
        )
    if r.mann_whitney is not None:
        m = r.mann_whitney
        lines.append(
            f"Mann–Whitney U = {m.u:g} ({a} better than {b}), p = {m.p_two_sided:.3g} "
            f"(two-sided, {m.method})"
        )
    if r.probability_of_improvement is not None:
        p = r.probability_of_improvement
        where = "" if claim.task_tag is None else ", averaged over tasks"
        kind = "bootstrap" if claim.task_tag is None else "stratified bootstrap"
        lines.append(
            f"P({a} better than {b}){where} = {p.estimate:.3g}, {pct} {kind} CI "
            f"[{p.low:.3g}, {p.high:.3g}]"
        )
    if claim.task_tag is None and r.bootstrap_difference is not None:
        d = r.bootstrap_difference
        lines.append(
            f"bootstrap {pct} CI of the difference [{d.low:.4g}, {d.high:.4g}] "
            f"({r.n_resamples} resamples, seed {r.seed})"
        )
    if r.tasks:
        lines.append(
            f"per task (mean {a} / {b}, P(better)): "
            + "; ".join(
                f"{t.task} {_num(t.mean_a)} / {_num(t.mean_b)} "
                f"({_num(t.probability_of_improvement)})"
                for t in r.tasks
            )
        )
    return lines


def _claimed_up(claim: ComparisonClaim) -> bool:
    """Whether the claim says mean(a) > mean(b)."""
    return (claim.direction == "better") == claim.higher_is_better


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _error(
    head: dict[str, Any], reason: str, evidence: list[RunEvidence] | None = None
) -> ClaimAudit:
    if evidence:
        head = {**head, "runs": evidence}
    return ClaimAudit(**head, verdict="error", reasons=[reason])
