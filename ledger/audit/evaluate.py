"""One claim against its runs: the values, ledger.stats' numbers, the checks and the verdict.

Verdict precedence: a claim that cannot be judged is ``error``; runs that contradict the number
make it ``not_supported`` whatever else is wrong; otherwise any failed consistency check makes
it ``not_reproducible``; otherwise the statistical verdict (supported / inconclusive) stands.
The margin is the claim's ``margin``, else the audit's, else the claimed sd (read from the
spread) but at least twice the rounding half-width r, so a supporting interval exists.
"""

from __future__ import annotations

import math
from typing import Any, cast

from ..records.audit import AuditCheck, ClaimAudit, ClaimProblem, ClaimVerdictName, RunEvidence
from ..stats import (
    bound_verdict,
    check_consistency,
    claim_tost,
    claim_verdict,
    combine_verdicts,
    rounding_halfwidth,
    seeds_needed,
    sigma_readings,
    single_run_verdict,
    summarize,
)
from .claims import Claim, ComparisonClaim
from .compare import evaluate_comparison
from .context import AuditContext, _replay_check, evidence_of
from .load import LoadedClaim
from .select import RecordedRun, run_value, select_runs, test_selection_marks

__all__ = ["AuditContext", "evaluate_claim"]

_HEADLINES = {
    "n_matches": "the number of runs differs from the claim's n_seeds",
    "value_rounds": "the recorded value does not round to the claimed value",
    "spread_rounds": "the recorded spread does not round to the claimed ±",
    "not_best_seed": "the claimed value is the best seed, not the aggregate over seeds",
    "no_test_selection": "the test split was used to select the checkpoint or stop early",
    "variance_sources_stated": "the claim does not say what varied between runs",
    "claim_complete": "the claim does not state everything a reproduction needs",
    "runs_reproducible": "runs behind the claim did not reproduce",
    "delivery_gate": "a checkpoint behind the claim has no passing delivery gate",
}


def evaluate_claim(loaded: LoadedClaim, ctx: AuditContext) -> ClaimAudit:
    if loaded.claim is None:
        return ClaimAudit(
            index=loaded.index,
            id=loaded.id,
            line=loaded.line,
            source=_raw_source(loaded.raw),
            verdict="error",
            reasons=[_problem_text(p) for p in loaded.problems],
            problems=list(loaded.problems),
        )
    claim = loaded.claim
    head: dict[str, Any] = {
        "index": loaded.index,
        "id": claim.id,
        "line": loaded.line,
        "source": {k: v for k, v in claim.source.model_dump().items() if v is not None},
        "claim": claim.model_dump(mode="json"),
    }
    if isinstance(claim, ComparisonClaim):
        return evaluate_comparison(claim, head, ctx)
    head["varied_sources"] = claim.varied_sources
    selected = select_runs(ctx.runs, claim.runs)
    if not selected:
        return _error(
            head,
            f"no recorded run matches runs: {claim.runs.describe()} "
            f"({len(ctx.runs)} run(s) in the ledger)",
        )
    evidence, values, marks = _collect(ctx, claim, selected)
    head["runs"] = evidence
    if not any(any(m.name == claim.metric for m in r.run.metrics) for r in selected):
        have = sorted({m.name for r in selected for m in r.run.metrics})
        return _error(
            head,
            f"unknown metric {claim.metric!r}: the {len(selected)} selected run(s) record "
            + (", ".join(have) or "no metrics"),
        )
    head["values"] = values
    few = _few_runs_problem(claim, len(values))
    if few is not None:
        return _error(head, few[0], needs=few[1])
    gate = _gate(ctx, evidence) if claim.require_gate else []
    try:
        if claim.bound is not None or _is_single_run(claim, len(values)):
            return _judge_plain(head, claim, values, evidence, marks, ctx.margin, gate)
        return _judge(head, claim, values, evidence, marks, ctx.margin, gate)
    except ValueError as e:
        return _error(head, f"cannot evaluate: {e}")


def _gate(ctx: AuditContext, evidence: list[RunEvidence]) -> list[AuditCheck]:
    """``require_gate``'s check, one more of the claim's checks: failed, it makes the claim not
    reproducible (with no seeds to suggest) unless the numbers already say not supported."""
    from .gates import gate_check

    return [gate_check(ctx.store, [e.run_id for e in evidence if e.used])]


def _collect(
    ctx: AuditContext, claim: Claim, selected: list[RecordedRun]
) -> tuple[list[RunEvidence], list[float], dict[str, list[str]]]:
    evidence: list[RunEvidence] = []
    values: list[float] = []
    marks: dict[str, list[str]] = {}
    for r in selected:
        run = r.run
        note: str | None = None
        value = step = None
        if run.replay_of and not claim.runs.include_replays:
            note = f"a replay of {run.replay_of}, not a seed (set runs.include_replays)"
        elif run.status != "succeeded":
            note = f"run {run.status}; only succeeded runs are used"
        else:
            got = run_value(ctx.store, claim, run)
            value, step, note = got.value, got.step, got.note
        used = value is not None and math.isfinite(value)
        if used and value is not None:
            values.append(value)
            for m in test_selection_marks(ctx.store, run):
                marks.setdefault(m, []).append(r.run_id)
        evidence.append(
            evidence_of(ctx, r.run_id, r.oid, run, value=value, step=step, used=used, note=note)
        )
    return evidence, values, marks


def _is_single_run(claim: Claim, k: int) -> bool:
    """A claim about one run: no spread, and n_seeds 1, or unstated with one run found."""
    return claim.spread is None and (claim.n_seeds == 1 or (claim.n_seeds is None and k == 1))


def _value(claim: Claim) -> float:
    """The claimed value; every claim without a bound has one (``Claim`` validates it)."""
    return cast(float, claim.value)


def _few_runs_problem(claim: Claim, k: int) -> tuple[str, str] | None:
    """(reason, short cause for the verdict line) when ``k`` values cannot judge the claim: a
    claim about one run that found several or none, a claim over several runs (a spread, or
    n_seeds of 2 or more) that found fewer than two."""
    if claim.n_seeds == 1 and claim.spread is None:
        if k == 1:
            return None
        return (
            f"the claim is about one run (n_seeds: 1) and {k} runs give a value for "
            f"{claim.metric!r}; narrow `runs:` to the run behind it",
            f"1 run claimed, {k} found",
        )
    if k == 0:
        return f"no run gives a finite value for {claim.metric!r}", "no run gives a value"
    several = claim.spread is not None or (claim.n_seeds is not None and claim.n_seeds >= 2)
    if k == 1 and several:
        kind = claim.spread_type if claim.spread is not None else f"mean of {claim.n_seeds} runs"
        return _too_few(claim, k), f"a {kind} claim needs 2+ runs, 1 found"
    return None


def _judge_plain(
    head: dict[str, Any],
    claim: Claim,
    values: list[float],
    evidence: list[RunEvidence],
    marks: dict[str, list[str]],
    audit_margin: float | None,
    gate: list[AuditCheck],
) -> ClaimAudit:
    """A bound claim, or a value claim about one run: no claimed spread to read, so the
    verdict is plain (one value against the rounding or the bound), or for a bound over
    several runs rests on their own interval (ledger.stats.bounds)."""
    notes: list[str] = []
    judged = values
    if claim.aggregate == "max":
        best = max(values) if claim.higher_is_better else min(values)
        judged = [best]
        notes.append(f"aggregate max: the best run's value {best:.6g} is judged")
    elif claim.aggregate != "mean" and len(values) > 1:
        notes.append(
            f"the verdict tests the mean of the runs; the claim reports the {claim.aggregate}"
        )
    stats: dict[str, Any] = {"summary": summarize(values).to_json()}
    bound = claim.bound
    seeds = None
    if bound is not None:
        bv = bound_verdict(judged, bound=bound[1], side=bound[0])
        stats["bound"] = bv.to_json()
        stat_verdict, exceeds, lines = bv.verdict, bv.exceeds, list(bv.evidence)
        seeds = bv.seeds_needed
    else:
        margin = claim.margin if claim.margin is not None else audit_margin
        sv = single_run_verdict(
            judged[0], value=_value(claim), decimals=claim.decimals, margin=margin or 0.0
        )
        stats["single_run"] = sv.to_json()
        stats["rounding"] = sv.rounding
        stat_verdict, exceeds, lines = sv.verdict, sv.exceeds, list(sv.evidence)
    stats["verdict"] = stat_verdict
    single = len(judged) == 1
    checks = [*_plain_checks(claim, len(values), single, evidence, marks), *gate]
    failed = [c for c in checks if c.passed is False]
    verdict: ClaimVerdictName
    if stat_verdict == "not_supported":
        verdict = "not_supported"
    elif failed:
        verdict = "not_reproducible"
    else:
        verdict = "supported" if stat_verdict == "supported" else "inconclusive"
    reasons = [f"{_HEADLINES.get(c.name, c.name)} ({c.detail})" for c in failed]
    if exceeds:
        lines.append("exceeds: the runs lie above the claim")
    reasons = lines + reasons if verdict == "not_supported" else reasons + lines
    reasons.extend(notes)
    seeds = seeds if verdict == "inconclusive" else None
    if seeds is not None:
        reasons.append(f"about {seeds} runs would settle it (80% power)")
    return ClaimAudit(
        **head,
        verdict=verdict,
        exceeds=exceeds and verdict == "not_supported",
        reasons=reasons,
        checks=checks,
        statistics=stats,
        seeds_needed=seeds,
    )


def _plain_checks(
    claim: Claim,
    k: int,
    single: bool,
    evidence: list[RunEvidence],
    marks: dict[str, list[str]],
) -> list[AuditCheck]:
    """The checks of a one-run or bound claim: what it must state (split; n_seeds too over
    several runs), the runs it names, test-split selection, what varied, their replays."""
    checks: list[AuditCheck] = []
    if claim.n_seeds is not None and not single:
        checks.append(
            AuditCheck(
                name="n_matches",
                passed=k == claim.n_seeds,
                detail=f"{k} recorded runs, claim says {claim.n_seeds}",
            )
        )
    wanted: dict[str, object] = {"split": claim.split}
    if not single:
        wanted = {"n_seeds": claim.n_seeds, **wanted}
    checks.append(_complete_check(wanted))
    checks.append(_test_selection_check(claim, marks))
    if not single:
        checks.append(_sources_check(claim))
    checks.append(_replay_check(evidence))
    return checks


def _complete_check(wanted: dict[str, object]) -> AuditCheck:
    missing = [label for label, v in wanted.items() if v is None]
    return AuditCheck(
        name="claim_complete",
        passed=not missing,
        detail="missing: " + ", ".join(missing) if missing else f"{_and(list(wanted))} stated",
    )


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _test_selection_check(claim: Claim, marks: dict[str, list[str]]) -> AuditCheck:
    on_test = claim.checkpoint == "best-test"
    detail = (
        "; ".join((["checkpoint: best-test"] if on_test else []) + _marks_text(marks))
        or f"checkpoint {claim.checkpoint}; no run marks test-split selection"
    )
    return AuditCheck(name="no_test_selection", passed=not (on_test or marks), detail=detail)


def _sources_check(claim: Claim) -> AuditCheck:
    return AuditCheck(
        name="variance_sources_stated",
        passed=bool(claim.varied_sources),
        detail=", ".join(claim.varied_sources) or "varied_sources is empty",
    )


def _judge(
    head: dict[str, Any],
    claim: Claim,
    values: list[float],
    evidence: list[RunEvidence],
    marks: dict[str, list[str]],
    audit_margin: float | None,
    gate: list[AuditCheck],
) -> ClaimAudit:
    r = rounding_halfwidth(claim.decimals)
    n_claim = claim.n_seeds or len(values)
    readings: dict[str, float] = {}
    if claim.spread is not None and claim.spread_type is not None and n_claim >= 2:
        readings = sigma_readings(claim.spread, claim.spread_type, n_claim, level=claim.level)
    summary = summarize(values)
    if not readings:  # no claimed spread: only the recorded one can set a default margin
        readings = {"recorded": summary.std or 0.0}
    stats: dict[str, Any] = {"summary": summary.to_json(), "rounding": r, "n_claimed": n_claim}
    notes: list[str] = []
    per: dict[str, Any] = {}
    verdicts: list[str] = []
    needed: list[int] = []
    chosen = claim.margin if claim.margin is not None else audit_margin
    for name, sigma in readings.items():
        label = "recorded sd" if name == "recorded" else "claimed sd"
        margin, source = (
            (chosen, "given") if chosen is not None else _default_margin(sigma, r, label)
        )
        entry: dict[str, Any] = {"sigma": sigma, "margin": margin, "margin_source": source}
        if claim.aggregate != "max":
            cv = claim_verdict(values, value=_value(claim), decimals=claim.decimals, margin=margin)
            entry["verdict"] = cv.to_json()
            verdicts.append(cv.verdict)
            if cv.seeds_needed is not None:
                needed.append(cv.seeds_needed)
        if name != "recorded" and n_claim >= 2:
            entry["tost"] = claim_tost(
                values, value=_value(claim), sigma=sigma, n=n_claim, margin=margin
            ).to_json()
        per[name] = entry
    stats["readings"] = per
    first = next(iter(per.values()))
    if claim.aggregate == "max":
        stat_verdict = "inconclusive"
        notes.append(
            "a best-of-n value has no confidence interval: the claim can be checked for "
            "consistency only, never supported"
        )
    else:
        stat_verdict = combine_verdicts(verdicts)
        if len(set(verdicts)) > 1:
            shown = ", ".join(f"{k}: {v['verdict']['verdict']}" for k, v in per.items())
            notes.append(f"the readings of ± disagree ({shown}), so the verdict is inconclusive")
        if claim.aggregate != "mean":
            notes.append(
                f"the verdict tests the mean of the runs; the claim reports the {claim.aggregate}"
            )
    stats["verdict"] = stat_verdict
    checks = [*_checks(claim, values, evidence, marks, stats), *gate]
    failed = [c for c in checks if c.passed is False]
    exceeds = False
    verdict: ClaimVerdictName
    if stat_verdict == "not_supported":
        verdict = "not_supported"
        exceeds = any(v.get("verdict", {}).get("exceeds") for v in per.values())
    elif failed:
        verdict = "not_reproducible"
    else:
        verdict = "supported" if stat_verdict == "supported" else "inconclusive"
    reasons = [f"{_HEADLINES.get(c.name, c.name)} ({c.detail})" for c in failed]
    statistical = _statistical_reasons(first, stat_verdict, exceeds)
    reasons = statistical + reasons if verdict == "not_supported" else reasons + statistical
    reasons.extend(notes)
    seeds = max(needed) if verdict == "inconclusive" and needed else None
    if seeds is not None:
        reasons.append(f"about {seeds} seeds would settle it (80% power)")
    return ClaimAudit(
        **head,
        verdict=verdict,
        exceeds=exceeds,
        reasons=reasons,
        checks=checks,
        statistics=stats,
        seeds_needed=seeds,
        margin=first["margin"],
        margin_source=first["margin_source"],
    )


def _default_margin(sigma: float, r: float, label: str = "claimed sd") -> tuple[float, str]:
    if sigma > r:
        return sigma, label
    return 2 * r, "twice the rounding half-width"


def _statistical_reasons(first: dict[str, Any], verdict: str, exceeds: bool) -> list[str]:
    cv = first.get("verdict")
    if cv is None:
        return []
    lines = [str(line) for line in cv["evidence"][-1:]]
    if exceeds:
        lines.append("exceeds: the runs lie above the claimed value")
    return lines


def _checks(
    claim: Claim,
    values: list[float],
    evidence: list[RunEvidence],
    marks: dict[str, list[str]],
    stats: dict[str, Any],
) -> list[AuditCheck]:
    checks: list[AuditCheck] = []
    if claim.spread is not None and claim.spread_type is not None and claim.n_seeds is not None:
        report = check_consistency(
            values,
            value=_value(claim),
            decimals=claim.decimals,
            spread=claim.spread,
            spread_type=claim.spread_type,
            n_seeds=claim.n_seeds,
            aggregate=claim.aggregate,
            higher_is_better=claim.higher_is_better,
            spread_decimals=claim.spread_decimals,
            level=claim.level,
        )
        stats["consistency"] = report.to_json()
        checks.extend(
            AuditCheck(name=c.name, passed=c.passed, detail=c.detail) for c in report.checks
        )
    checks.append(
        _complete_check({"n_seeds": claim.n_seeds, "spread": claim.spread, "split": claim.split})
    )
    checks.append(_test_selection_check(claim, marks))
    checks.append(_sources_check(claim))
    checks.append(_replay_check(evidence))
    return checks


def _marks_text(marks: dict[str, list[str]]) -> list[str]:
    out = []
    for mark, ids in marks.items():
        shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
        out.append(
            f"{mark} on run {ids[0]}" if len(ids) == 1 else f"{mark} on {len(ids)} runs ({shown})"
        )
    return out


def _too_few(claim: Claim, k: int) -> str:
    kind = claim.spread_type or "spread"
    msg = (
        f"{k} run(s) give a value for {claim.metric!r}; a {kind} (and any confidence interval) "
        "needs at least 2"
    )
    if (
        claim.spread is not None
        and claim.spread_type is not None
        and claim.spread_type != "unspecified"
        and claim.n_seeds is not None
        and claim.n_seeds >= 2
    ):
        sigma = sigma_readings(claim.spread, claim.spread_type, claim.n_seeds, level=claim.level)
        s = next(iter(sigma.values()))
        r = rounding_halfwidth(claim.decimals)
        margin = claim.margin if claim.margin is not None else _default_margin(s, r)[0]
        if s > 0 and margin > r:
            need = seeds_needed(margin - r, s, design="one-sample")
            msg += f"; with the claimed spread about {need} runs would be needed"
    return msg


def _error(head: dict[str, Any], reason: str, *, needs: str | None = None) -> ClaimAudit:
    """A claim that cannot be judged; ``needs``, when given, is the short cause the verdict
    line shows (what more the claim needs)."""
    stats = {"needs": needs} if needs is not None else {}
    return ClaimAudit(**head, verdict="error", reasons=[reason], statistics=stats)


def _problem_text(p: ClaimProblem) -> str:
    where = f"line {p.line}" if p.line is not None else "claim"
    return f"{where}: {p.field or 'claim'}: {p.message}"


def _raw_source(raw: Any) -> dict[str, str]:
    source = raw.get("source") if isinstance(raw, dict) else None
    if not isinstance(source, dict):
        return {}
    return {str(k): str(v) for k, v in source.items() if k in {"paper", "table", "row"}}
