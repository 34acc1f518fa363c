"""Comparative claims at their edges (mutation round 6, ledger/audit/compare.py): the evidence
lines word for word (the interval's level, the one-sided p in the claimed direction, a mean over
tasks), the runs each method stands on (a failed run, a replay a selector takes as a seed, a task
the claim leaves out), and the errors a claims file can run into."""

from __future__ import annotations

from _audit_lab import Lab

from ledger.audit import audit
from ledger.audit.replays import ReplayCheck
from ledger.records.audit import ClaimAudit

METHODS = "  a: {names: [a]}\n  b: {names: [b]}\n"


def _one(lab: Lab, body: str, methods: str = METHODS, **kw: object) -> ClaimAudit:
    text = f"methods:\n{methods}claims:\n{body}"
    (claim,) = audit(lab.store, lab.claims(text), **kw).claims  # type: ignore[arg-type]
    return claim


def _welch_lines(c: ClaimAudit, a: str, b: str, one_sided: str, pct: str = "95%") -> list[str]:
    s = c.statistics["comparison"]
    w, m, p, d = s["welch"], s["mann_whitney"], s["probability_of_improvement"], None
    d = s["bootstrap_difference"]
    lo, hi = s["difference_ci"]
    return [
        f"difference {a} − {b} = {s['difference']:.4g} (mean {s['aggregate_a']:.6g} vs "
        f"{s['aggregate_b']:.6g}, n = {s['n_a']} vs {s['n_b']}); {pct} Welch CI "
        f"[{lo:.4g}, {hi:.4g}]",
        f"Welch t = {w['t']:.4g}, df = {w['df']:.4g}, p = {w['p_two_sided']:.3g} (two-sided; "
        f"{w[one_sided]:.3g} one-sided in the claimed direction)",
        f"Mann–Whitney U = {m['u']:g} ({a} better than {b}), p = {m['p_two_sided']:.3g} "
        f"(two-sided, {m['method']})",
        f"P({a} better than {b}) = {p['estimate']:.3g}, {pct} bootstrap CI "
        f"[{p['low']:.3g}, {p['high']:.3g}]",
        f"bootstrap {pct} CI of the difference [{d['low']:.4g}, {d['high']:.4g}] "
        f"({s['n_resamples']} resamples, seed {s['seed']})",
    ]


def test_a_one_task_comparison_prints_its_evidence_word_for_word(lab: Lab) -> None:
    lab.seeds("a", [93.1, 93.4, 93.0, 93.6, 93.3])
    lab.seeds("b", [92.5, 92.9, 92.6, 93.0, 92.7])
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b}\n")
    assert c.verdict == "supported"
    w = c.statistics["comparison"]["welch"]
    assert w["p_greater"] < 0.05 < w["p_less"]  # a above b: the claimed side is "greater"
    assert c.reasons[1:] == _welch_lines(c, "a", "b", "p_greater")
    # alpha 0.1: a 90% interval, named so
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, alpha: 0.1}\n")
    assert c.reasons[1:] == _welch_lines(c, "a", "b", "p_greater", pct="90%")


def test_a_lower_is_better_claim_reports_the_one_sided_p_below(lab: Lab) -> None:
    lab.seeds("a", [0.30, 0.31, 0.29, 0.30], metric="test/loss")
    lab.seeds("b", [0.40, 0.41, 0.39, 0.42], metric="test/loss")
    base = "  - {kind: comparison, metric: test/loss, higher_is_better: false, a: a, b: b"
    c = _one(lab, base + "}\n")
    assert c.verdict == "supported"
    w = c.statistics["comparison"]["welch"]
    assert w["p_less"] < 0.05 < w["p_greater"]
    assert c.reasons[2] == _welch_lines(c, "a", "b", "p_less")[1]
    # "a is worse than b", lower is better: the claimed side is a above b
    c = _one(lab, base + ", direction: worse}\n")
    assert c.verdict == "contradicted"
    assert _welch_lines(c, "a", "b", "p_greater")[1] in c.reasons


def _tasks(lab: Lab, spread: float = 0.02, gap: float = 0.1) -> None:
    for game in ("pong", "qbert"):
        for method, level in (("a", 0.5 + gap), ("b", 0.5)):
            finals = [level + spread * d for d in (-1.0, -0.5, 0.0, 0.5, 1.0)]
            lab.seeds(f"{method}-{game}", finals, name=method, tags={"g": game})


def test_a_mean_over_tasks_is_named_mean_and_an_iqm_is_named_iqm(lab: Lab) -> None:
    _tasks(lab)
    body = "  - {kind: comparison, metric: test/acc, a: a, b: b, task_tag: g"
    mean = _one(lab, body + ", aggregate: mean}\n")
    iqm = _one(lab, body + "}\n")
    assert mean.verdict == iqm.verdict == "supported"
    assert mean.reasons[1].startswith("mean over 2 tasks: a 0.6 (n = 10) vs b 0.5 (n = 10); ")
    assert iqm.reasons[1].startswith("IQM over 2 tasks: a 0.6 (n = 10) vs b 0.5 (n = 10); ")
    assert "95% stratified bootstrap CI" in mean.reasons[1]
    assert (
        mean.reasons[-1]
        == "per task (mean a / b, P(better)): pong 0.6 / 0.5 (1); qbert 0.6 / 0.5 (1)"
    )


def test_an_open_multi_task_claim_asks_for_runs_per_method_and_task(lab: Lab) -> None:
    _tasks(lab, spread=0.4, gap=0.05)
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, task_tag: g}\n")
    assert c.verdict == "inconclusive" and c.seeds_needed is not None
    basis = c.statistics["comparison"]["seeds_needed_basis"]
    assert c.reasons[-1] == (
        f"about {c.seeds_needed} runs per method and task would settle it (80% power, {basis})"
    )


def test_four_runs_in_both_methods_are_shown_three_and_more(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2, 1.3], tags={"lr": "0.1"})
    c = _one(
        lab,
        "  - {kind: comparison, metric: test/acc, a: x, b: y}\n",
        "  x: {names: [a]}\n  y: {tags: {lr: '0.1'}}\n",
    )
    assert c.verdict == "error"
    assert c.reasons == [
        "methods 'x' and 'y' select the same 4 run(s) (a-00, a-01, a-02, ...); a run can stand "
        "for one method only: narrow the selectors in `methods`"
    ]


def test_a_selector_that_takes_replays_uses_them_as_seeds(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2])
    lab.seeds("b", [0.5, 0.6])
    lab.add("b-replay", {"test/acc": [(0, 0.55)]}, name="b", replay_of="b-00")
    body = "  - {kind: comparison, metric: test/acc, a: a, b: b}\n"
    by_selector = _one(lab, body, "  a: {names: [a]}\n  b: {names: [b], include_replays: true}\n")
    by_claim = _one(
        lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, include_replays: true}\n"
    )
    for c in (by_selector, by_claim):
        assert all(e.used for e in c.runs), c.runs
        assert c.statistics["comparison"]["n_b"] == 3


def test_a_failed_run_is_no_seed_of_its_method(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2])
    lab.seeds("b", [0.5, 0.6])
    lab.add("b-crashed", {"test/acc": [(0, 5.0)]}, name="b", status="failed")
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b}\n")
    crashed = next(e for e in c.runs if e.run_id == "b-crashed")
    assert not crashed.used and crashed.note == "run failed; only succeeded runs are used"
    assert c.statistics["comparison"]["n_b"] == 2
    assert c.verdict == "supported"


def test_tasks_the_claim_leaves_out_and_runs_not_used_add_no_task(lab: Lab) -> None:
    _tasks(lab)
    lab.seeds("a-breakout", [0.6, 0.61], name="a", tags={"g": "breakout"})
    lab.add("b-crashed", {"test/acc": [(0, 0.5)]}, name="b", status="failed", tags={"g": "doom"})
    body = "  - {kind: comparison, metric: test/acc, a: a, b: b, task_tag: g"
    c = _one(lab, body + ", tasks: [pong, qbert]}\n")
    assert c.verdict == "supported"
    assert [t["task"] for t in c.statistics["comparison"]["tasks"]] == ["pong", "qbert"]
    left_out = [e for e in c.runs if e.task == "breakout"]
    assert left_out and all(
        not e.used and e.note == "task 'breakout' is not among the claim's tasks" for e in left_out
    )
    # without `tasks`: every task a used run has; the crashed run's "doom" is none of them
    c = _one(lab, body + "}\n")
    assert [t["task"] for t in c.statistics["comparison"]["tasks"]] == [
        "breakout",
        "pong",
        "qbert",
    ]


def test_no_run_with_the_task_tag_is_an_error_that_names_it(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2])
    lab.seeds("b", [0.5, 0.6, 0.7])
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, task_tag: game}\n")
    assert c.verdict == "error"
    assert c.reasons == ["no run of either method has the task tag 'game'"]
    assert {e.note for e in c.runs} == {"no tag 'game', so no task"}


def test_a_failed_replay_leaves_an_open_claim_not_reproducible_and_a_contradicted_one(
    lab: Lab,
) -> None:
    lab.seeds("a", [1.0, 1.4, 0.8, 1.3, 1.1])
    lab.seeds("b", [0.9, 1.2, 0.7, 1.2, 1.0])

    def replayer(store: object, run_id: str) -> ReplayCheck:
        outcome = "not-reproduced" if run_id in ("a-02", "c-02") else "reproduced"
        return ReplayCheck(outcome=outcome, mode="bitwise", summary="test")

    body = "  - {kind: comparison, metric: test/acc, a: a, b: b}\n"
    assert _one(lab, body).verdict == "inconclusive"
    c = _one(lab, body, replay=True, replayer=replayer)
    assert c.verdict == "not_reproducible" and c.seeds_needed is None
    assert c.statistics["comparison"]["verdict"] == "inconclusive"

    # the numbers say otherwise: a failed replay does not soften that
    lab.seeds("c", [93.1, 93.4, 93.0, 93.6, 93.3])
    worse = "  - {kind: comparison, metric: test/acc, a: c, b: b, direction: worse}\n"
    methods = "  c: {names: [c]}\n  b: {names: [b]}\n"
    c = _one(lab, worse, methods, replay=True, replayer=replayer)
    assert c.verdict == "contradicted"
    assert c.checks[0].passed is False and "c-02 not-reproduced" in c.checks[0].detail


def test_a_claimed_difference_that_is_not_finite_cannot_be_evaluated(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2])
    lab.seeds("b", [0.5, 0.6, 0.7])
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, difference: .inf}\n")
    assert c.verdict == "error"
    assert c.reasons == ["cannot evaluate: difference must be finite, got inf"]


def test_a_multi_task_comparison_prints_its_evidence_word_for_word(lab: Lab) -> None:
    """Over several tasks the stratified bootstrap CI is the one that decides, printed in the
    first line; there is no second bootstrap line, as a one-task claim has beside Welch's."""
    _tasks(lab)
    c = _one(lab, "  - {kind: comparison, metric: test/acc, a: a, b: b, task_tag: g}\n")
    assert c.verdict == "supported"
    s = c.statistics["comparison"]
    p = s["probability_of_improvement"]
    lo, hi = s["difference_ci"]
    assert c.reasons[1:] == [
        f"IQM over 2 tasks: a {s['aggregate_a']:.6g} (n = 10) vs b {s['aggregate_b']:.6g} "
        f"(n = 10); difference {s['difference']:.4g}, 95% stratified bootstrap CI "
        f"[{lo:.4g}, {hi:.4g}] ({s['n_resamples']} resamples, seed {s['seed']})",
        f"P(a better than b), averaged over tasks = {p['estimate']:.3g}, 95% stratified "
        f"bootstrap CI [{p['low']:.3g}, {p['high']:.3g}]",
        "per task (mean a / b, P(better)): pong 0.6 / 0.5 (1); qbert 0.6 / 0.5 (1)",
    ]
