"""Comparative claims in-process: the how-to example, inconclusive with seeds needed, lower is
better, per-task normalisation, replays, and selectors that find nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _audit_lab import Lab

from ledger.audit import audit, parse_claims, render_markdown
from ledger.audit.replays import ReplayCheck
from ledger.records.audit import ClaimAudit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "audit-claims.md"
EXAMPLE = next(
    b
    for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    if "kind: comparison" in b
)


def _one(lab: Lab, body: str, methods: str) -> ClaimAudit:
    text = f"methods:\n{methods}claims:\n{body}"
    (claim,) = audit(lab.store, lab.claims(text)).claims
    return claim


def test_the_how_to_example(lab: Lab) -> None:
    assert parse_claims(EXAMPLE.encode()).problems == []
    games = {"pong": (-21.0, 21.0), "breakout": (0.0, 400.0), "qbert": (0.0, 20000.0)}
    for game, (low, high) in games.items():
        span = high - low
        for method, level in (("dqn-ours", 0.6), ("dqn-baseline", 0.5)):
            finals = [low + span * (level + d) for d in (-0.02, -0.01, 0.0, 0.01, 0.02)]
            lab.seeds(
                f"{method}-{game}", finals, metric="eval/return", name=method, tags={"game": game}
            )
    result = audit(lab.store, lab.claims(EXAMPLE))
    got = {c.id: c.verdict for c in result.claims}
    assert got == {
        "ours-beats-baseline-on-pong": "supported",
        "ours-better-on-average": "supported",
    }
    assert "the claims are **supported**" in PAGE.read_text(encoding="utf-8")
    avg = result.claims[1].statistics["comparison"]
    assert avg["aggregate_a"] == pytest.approx(0.6) and avg["aggregate_b"] == pytest.approx(0.5)


def test_inconclusive_says_how_many_runs(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.4, 0.8, 1.3, 1.1])
    lab.seeds("b", [0.9, 1.2, 0.7, 1.2, 1.0])
    c = _one(
        lab,
        "  - {kind: comparison, metric: test/acc, a: a, b: b}\n",
        "  a: {names: [a]}\n  b: {names: [b]}\n",
    )
    assert c.verdict == "inconclusive" and c.seeds_needed is not None and c.seeds_needed > 5
    assert any(f"about {c.seeds_needed} runs per method would settle it" in r for r in c.reasons)
    assert f"inconclusive (~{c.seeds_needed} seeds)" in render_markdown(
        audit(lab.store, lab.dir / "claims.yaml")
    )


def test_lower_is_better(lab: Lab) -> None:
    lab.seeds("a", [0.30, 0.31, 0.29, 0.30], metric="test/loss")
    lab.seeds("b", [0.40, 0.41, 0.39, 0.42], metric="test/loss")
    methods = "  a: {names: [a]}\n  b: {names: [b]}\n"
    base = "  - {kind: comparison, metric: test/loss, higher_is_better: false, a: a, b: b"
    assert _one(lab, base + "}\n", methods).verdict == "supported"
    assert _one(lab, base + ", difference: -0.1}\n", methods).verdict == "supported"
    assert _one(lab, base + ", direction: worse}\n", methods).verdict == "contradicted"


def test_normalisation_and_missing_task(lab: Lab) -> None:
    for game, scale in (("pong", 1.0), ("qbert", 1000.0)):
        lab.seeds(f"a-{game}", [scale * v for v in (0.6, 0.62, 0.58)], name="a", tags={"g": game})
        lab.seeds(f"b-{game}", [scale * v for v in (0.5, 0.52, 0.48)], name="b", tags={"g": game})
    methods = "  a: {names: [a]}\n  b: {names: [b]}\n"
    c = _one(
        lab,
        "  - kind: comparison\n    metric: test/acc\n    a: a\n    b: b\n    task_tag: g\n"
        "    normalize: {pong: [0, 1], qbert: [0, 1000]}\n",
        methods,
    )
    assert c.verdict == "supported"
    assert c.statistics["comparison"]["aggregate_a"] == pytest.approx(0.6)
    c = _one(
        lab,
        "  - kind: comparison\n    metric: test/acc\n    a: a\n    b: b\n    task_tag: g\n"
        "    tasks: [pong, breakout]\n",
        methods,
    )
    assert c.verdict == "insufficient"
    assert "a on breakout: 0" in c.reasons[0] and "b on breakout: 0" in c.reasons[0]
    c = _one(
        lab,
        "  - kind: comparison\n    metric: test/acc\n    a: a\n    b: b\n    task_tag: g\n"
        "    normalize: {pong: [0, 1]}\n",
        methods,
    )
    assert c.verdict == "error" and "no [low, high] for task(s) qbert" in c.reasons[0]


def test_a_failed_replay_makes_it_not_reproducible(lab: Lab) -> None:
    lab.seeds("a", [93.1, 93.4, 93.0, 93.6, 93.3])
    lab.seeds("b", [92.5, 92.9, 92.6, 93.0, 92.7])
    path = lab.claims(
        "methods:\n  a: {names: [a]}\n  b: {names: [b]}\n"
        "claims:\n  - {kind: comparison, metric: test/acc, a: a, b: b}\n"
    )

    def replayer(store: object, run_id: str) -> ReplayCheck:
        outcome = "not-reproduced" if run_id == "a-02" else "reproduced"
        return ReplayCheck(outcome=outcome, mode="bitwise", summary="test")

    (c,) = audit(lab.store, path, replay=True, replayer=replayer).claims  # type: ignore[arg-type]
    assert c.verdict == "not_reproducible"
    assert c.reasons[0].startswith("runs behind the claim did not reproduce (a-02 not-reproduced")
    assert c.statistics["comparison"]["verdict"] == "supported"


def test_selector_that_matches_nothing_and_replays_as_seeds(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1])
    lab.seeds("b", [0.5, 0.6])
    lab.add("b-replay", {"test/acc": [(0, 0.55)]}, name="b", replay_of="b-00")
    c = _one(
        lab,
        "  - {kind: comparison, metric: test/acc, a: a, b: c}\n",
        "  a: {names: [a]}\n  c: {names: [nope]}\n",
    )
    assert c.verdict == "error" and "no recorded run matches method 'c' (names nope" in c.reasons[0]
    c = _one(
        lab,
        "  - {kind: comparison, metric: test/acc, a: a, b: b}\n",
        "  a: {names: [a]}\n  b: {names: [b]}\n",
    )
    skipped = [e for e in c.runs if not e.used]
    assert [e.run_id for e in skipped] == ["b-replay"] and "not a seed" in (skipped[0].note or "")


def test_html_draws_the_difference_against_zero(lab: Lab) -> None:
    from ledger.audit import render_html

    lab.seeds("a", [93.1, 93.4, 93.0, 93.6, 93.3])
    lab.seeds("b", [92.5, 92.9, 92.6, 93.0, 92.7])
    path = lab.claims(
        "methods:\n  a: {names: [a]}\n  b: {names: [b]}\n"
        "claims:\n  - {kind: comparison, metric: test/acc, a: a, b: b, difference: 0.5}\n"
        "  - {kind: comparison, metric: test/acc, a: b, b: a}\n"
    )
    html = render_html(audit(lab.store, path))
    assert html.count("<svg") == 2 and "<script" not in html
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)

    def xs(svg: str) -> tuple[float, float, float]:
        zero = float(re.search(r'class="zero" x1="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
        ci = re.search(r'class="ci" x1="([\d.]+)" y1="50" x2="([\d.]+)"', svg)
        assert ci is not None
        return zero, float(ci.group(1)), float(ci.group(2))

    zero, lo, hi = xs(svgs[0])
    assert zero < lo < hi  # a - b > 0: the decisive CI lies right of zero
    assert 'class="claimed"' in svgs[0]
    zero, lo, hi = xs(svgs[1])
    assert lo < hi < zero  # b - a < 0: left of zero


def test_overlapping_methods_are_an_error(lab: Lab) -> None:
    lab.seeds("a", [1.0, 1.1, 1.2], tags={"lr": "0.1"})
    c = _one(
        lab,
        "  - {kind: comparison, metric: test/acc, a: x, b: y}\n",
        "  x: {names: [a]}\n  y: {tags: {lr: '0.1'}}\n",
    )
    assert c.verdict == "error"
    assert "methods 'x' and 'y' select the same 3 run(s) (a-00, a-01, a-02)" in c.reasons[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "methods: {x: {names: [a]}}\nclaims:\n  - {metric: m, a: x, b: x}\n",
            (3, "kind", "add `kind: comparison`"),
        ),
        (
            "methods: {x: {names: [a]}, y: {names: [b]}}\n"
            "claims:\n  - {kind: comparison, metric: m, a: x, b: y, tasks: [pong]}\n",
            (3, "", "tasks are given without task_tag"),
        ),
        (
            "methods: {x: {names: [a]}, y: {names: [b]}}\n"
            "claims:\n  - {kind: comparison, metric: m, a: x, b: y, aggregate: median}\n",
            (3, "aggregate", "'iqm' or 'mean'"),
        ),
        (
            "methods: {x: {names: [a]}, y: {names: [b]}}\n"
            "claims:\n  - {kind: comparison, metric: m, a: x, b: x}\n",
            (3, "", "a and b name the same method 'x'"),
        ),
    ],
)
def test_comparison_claim_mistakes(text: str, expected: tuple[int, str, str]) -> None:
    problems = parse_claims(text.encode(), "c.yaml").problems
    assert any((p.line, p.field) == expected[:2] and expected[2] in p.message for p in problems), (
        problems
    )


def test_duplicate_method_is_a_usage_error() -> None:
    from ledger.errors import UsageError

    text = "methods:\n  x: {names: [a]}\n  x: {names: [b]}\nclaims:\n  - {kind: comparison}\n"
    with pytest.raises(UsageError, match=r"c.yaml:3: duplicate key 'x' \(first at line 2\)"):
        parse_claims(text.encode(), "c.yaml")
