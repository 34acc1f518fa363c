"""Claims about one run, and bound claims (issue 32, point 7).

A paper's "val loss 2.82" from a single run was an ``error`` ("a spread needs at least 2");
the answer is plain: 2.8217 rounds to 2.82 (supported), 2.82 is not 1.50 (not supported).
``below:`` / ``above:`` claims ("final loss below 3.0") are judged on one run as a plain
comparison, over several runs on the interval of their mean (docs/explanation/statistics.md,
"Bound claims"). Claims that need a spread still need two runs, and their verdict line says so.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _audit_lab import Lab
from _support import subprocess_env

from ledger.audit import audit, render_html, render_markdown
from ledger.records.audit import ClaimAudit


def _claim(cid: str, runs: str = "{names: [nano]}", **fields: object) -> str:
    base: dict[str, object] = {"metric": "val/loss", "higher_is_better": "false", "split": "val"}
    base.update(fields)
    lines = [f"  - id: {cid}", f"    runs: {runs}"]
    lines += [f"    {k}: {v}" for k, v in base.items() if v is not None]
    return "\n".join(lines) + "\n"


def _audit(lab: Lab, *claims: str, **kw: object) -> dict[str, ClaimAudit]:
    result = audit(lab.store, lab.claims("claims:\n" + "".join(claims)), **kw)  # type: ignore[arg-type]
    return {c.id: c for c in result.claims}


def _ledger(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledger", "--ledger", str(lab.store.root), *args],
        cwd=lab.dir,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_single_run_claims_from_the_command_line(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    path = lab.claims(
        "claims:\n"
        + _claim("rounds-to-it", value="2.82")
        + _claim("far-below-the-run", value="1.50")
        + _claim("just-above-the-run", value="2.83")
        + _claim("loss-below-3", below="3.0")
        + _claim("loss-below-2.8", below="2.8")
        + _claim("loss-above-2.5", above="2.5")
        + _claim("loss-above-2.9", above="2.9")
        + _claim("needs-a-spread", value="2.82", spread="0.01", spread_type="std", n_seeds=5)
    )
    r = _ledger(lab, "audit", str(path), "--json")
    assert r.returncode == 1, r.stderr
    got = {c["id"]: c for c in json.loads(r.stdout)["record"]["claims"]}
    assert {k: (c["verdict"], c["exceeds"]) for k, c in got.items()} == {
        "rounds-to-it": ("supported", False),
        "far-below-the-run": ("not_supported", True),
        "just-above-the-run": ("not_supported", False),
        "loss-below-3": ("supported", False),
        "loss-below-2.8": ("not_supported", True),
        "loss-above-2.5": ("supported", False),
        "loss-above-2.9": ("not_supported", False),
        "needs-a-spread": ("error", False),
    }
    assert got["rounds-to-it"]["reasons"] == [
        "one run: 2.8217 lies within (2.815, 2.825), 2.82 ± rounding 0.005"
    ]
    assert got["far-below-the-run"]["reasons"][:2] == [
        "one run: 2.8217 lies outside (1.495, 1.505), 1.5 ± rounding 0.005",
        "exceeds: the runs lie above the claim",
    ]
    assert got["loss-below-3"]["reasons"] == ["one run: 2.8217 is below 3"]
    assert got["loss-above-2.9"]["reasons"][0] == "one run: 2.8217 is not above 2.9"
    # A single run: what varied between runs is not asked; the split still is.
    assert [c["name"] for c in got["rounds-to-it"]["checks"]] == [
        "claim_complete",
        "no_test_selection",
        "runs_reproducible",
    ]
    assert got["rounds-to-it"]["checks"][0]["detail"] == "split stated"

    text = _ledger(lab, "audit", str(path))
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert "1. rounds-to-it (line 2): supported" in lines
    assert "2. far-below-the-run (line 8): not supported (exceeds)" in lines
    assert "8. needs-a-spread (line 44): error (a std claim needs 2+ runs, 1 found)" in lines
    assert "below 3 " in text.stdout


def test_a_single_run_claim_without_split_is_not_reproducible_unless_refuted(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    got = _audit(
        lab, _claim("no-split", value="2.82", split=None), _claim("wrong", value="9.1", split=None)
    )
    assert got["no-split"].verdict == "not_reproducible"
    assert got["no-split"].reasons[0] == (
        "the claim does not state everything a reproduction needs (missing: split)"
    )
    assert got["wrong"].verdict == "not_supported"  # the numbers say it whatever else is wrong


def test_a_margin_widens_a_single_run_claim(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    got = _audit(lab, _claim("wide", value="2.80", margin=0.05), _claim("plain", value="2.80"))
    assert got["wide"].verdict == "supported" and got["plain"].verdict == "not_supported"
    assert got["wide"].statistics["single_run"]["interval"] == pytest.approx([2.745, 2.855])
    assert got["wide"].reasons == [
        "one run: 2.8217 lies within (2.745, 2.855), 2.8 ± rounding 0.005 + margin 0.05"
    ]
    got = _audit(lab, _claim("plain", value="2.80"), margin=0.05)  # the audit's --margin
    assert got["plain"].verdict == "supported"


def test_n_seeds_one_names_a_single_run_claim(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    lab.seeds("pair", [2.8, 2.9], metric="val/loss")
    got = _audit(
        lab,
        _claim("one", value="2.82", n_seeds=1),
        _claim("one-of-two", value="2.82", n_seeds=1, runs="{names: [pair]}"),
        _claim("none", value="2.82", n_seeds=1, runs="{names: [pair], tags: {x: y}}"),
    )
    assert got["one"].verdict == "supported"
    assert got["one-of-two"].verdict == "error"
    assert got["one-of-two"].reasons == [
        "the claim is about one run (n_seeds: 1) and 2 runs give a value for 'val/loss'; "
        "narrow `runs:` to the run behind it"
    ]
    assert got["one-of-two"].statistics == {"needs": "1 run claimed, 2 found"}
    assert got["none"].verdict == "error"  # no run matches: the selector's own error


def test_claims_over_several_runs_still_need_two(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    got = _audit(
        lab,
        _claim("mean-of-5", value="2.82", n_seeds=5),
        _claim("bound-mean-of-5", below="3.0", n_seeds=5),
        _claim("sem", value="2.82", spread=0.01, spread_type="sem", n_seeds=1),
    )
    assert got["mean-of-5"].statistics == {"needs": "a mean of 5 runs claim needs 2+ runs, 1 found"}
    assert got["bound-mean-of-5"].statistics == {
        "needs": "a mean of 5 runs claim needs 2+ runs, 1 found"
    }
    assert got["sem"].statistics == {"needs": "a sem claim needs 2+ runs, 1 found"}
    assert all(c.verdict == "error" for c in got.values())
    assert got["mean-of-5"].reasons[0].startswith("1 run(s) give a value for 'val/loss'")


def test_no_finite_value_is_an_error_that_says_so(lab: Lab) -> None:
    lab.add("nano-00", {"val/loss": [(0, 3.0)]}, name="nano", status="failed")
    lab.add("nano-01", {"val/loss": [(0, 3.1)]}, name="nano")
    got = _audit(lab, _claim("x", value="2.82", runs="{names: [nano], ids: [nano-00]}"))
    assert got["x"].verdict == "error"
    assert got["x"].reasons == ["no run gives a finite value for 'val/loss'"]
    assert got["x"].statistics == {"needs": "no run gives a value"}


# -- bounds over several runs ------------------------------------------------------------------
LOW = [2.70, 2.72, 2.74, 2.76, 2.78]  # mean 2.74, sd 0.0316


@pytest.mark.parametrize(
    ("fields", "verdict", "exceeds"),
    [
        ({"below": "3.0"}, "supported", False),
        ({"below": "2.75"}, "inconclusive", False),  # mean below, interval across
        ({"below": "2.7"}, "not_supported", True),  # 95% CI all above
        ({"above": "2.6"}, "supported", False),
        ({"above": "2.75"}, "inconclusive", False),  # mean below: no seeds would do
        ({"above": "2.9"}, "not_supported", False),
    ],
)
def test_a_bound_over_several_runs_is_judged_on_the_interval_of_their_mean(
    lab: Lab, fields: dict[str, str], verdict: str, exceeds: bool
) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    got = _audit(lab, _claim("b", n_seeds=5, varied_sources="[seed]", **fields))["b"]
    assert (got.verdict, got.exceeds) == (verdict, exceeds)
    assert all(c.passed is not False for c in got.checks), got.checks
    assert [c.name for c in got.checks] == [
        "n_matches",
        "claim_complete",
        "no_test_selection",
        "variance_sources_stated",
        "runs_reproducible",
    ]
    bound = got.statistics["bound"]
    assert bound["n"] == 5 and bound["mean"] == pytest.approx(2.74)
    if verdict == "inconclusive" and "below" in fields:
        assert got.seeds_needed is not None and got.seeds_needed > 5
        assert got.reasons[-1] == f"about {got.seeds_needed} runs would settle it (80% power)"
    else:
        assert got.seeds_needed is None


def test_a_bound_over_several_runs_counts_the_runs_on_its_side(lab: Lab) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    got = _audit(lab, _claim("b", n_seeds=5, varied_sources="[seed]", below="2.75"))["b"]
    assert got.reasons[:2] == [
        "5 runs: mean 2.74, std 0.03162",
        "3 of 5 run(s) below 2.75 on their own",
    ]


def test_equal_runs_at_the_bound_are_not_below_it(lab: Lab) -> None:
    lab.seeds("nano", [3.0, 3.0], metric="val/loss")
    lab.seeds("under", [2.5, 2.5], metric="val/loss")
    got = _audit(
        lab,
        _claim("at", below="3.0", n_seeds=2, varied_sources="[seed]"),
        _claim("at-above", above="3.0", n_seeds=2, varied_sources="[seed]"),
        _claim("under", below="3.0", n_seeds=2, varied_sources="[seed]", runs="{names: [under]}"),
    )
    assert got["at"].verdict == "not_supported" and got["at"].exceeds
    assert got["at-above"].verdict == "not_supported" and not got["at-above"].exceeds
    assert got["under"].verdict == "supported"


def test_a_bound_over_several_runs_checks_what_the_claim_states(lab: Lab) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    lab.seeds("early", LOW, metric="val/loss", tags={"early_stopping": "test"})
    got = _audit(
        lab,
        _claim("n-differs", below="3.0", n_seeds=4, varied_sources="[seed]"),
        _claim("no-n", below="3.0", varied_sources="[seed]"),
        _claim("no-sources", below="3.0", n_seeds=5),
        _claim("early", below="3.0", n_seeds=5, varied_sources="[seed]", runs="{names: [early]}"),
    )
    assert {k: c.verdict for k, c in got.items()} == dict.fromkeys(got, "not_reproducible")
    failed = {k: [c.name for c in v.checks if c.passed is False] for k, v in got.items()}
    assert failed == {
        "n-differs": ["n_matches"],
        "no-n": ["claim_complete"],
        "no-sources": ["variance_sources_stated"],
        "early": ["no_test_selection"],
    }
    assert got["no-n"].reasons[0].endswith("(missing: n_seeds)")
    assert [c.detail for c in got["n-differs"].checks][:2] == [
        "5 recorded runs, claim says 4",
        "n_seeds and split stated",
    ]


def test_aggregates_of_a_bound(lab: Lab) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    got = _audit(
        lab,
        _claim("best", below="2.71", aggregate="max", n_seeds=5, varied_sources="[seed]"),
        _claim(
            "best-up",
            above="2.77",
            aggregate="max",
            n_seeds=5,
            varied_sources="[seed]",
            higher_is_better="true",
        ),
        _claim("median", below="3.0", aggregate="median", n_seeds=5, varied_sources="[seed]"),
    )
    assert got["best"].verdict == "supported"  # the lowest loss, 2.70, is below 2.71
    assert got["best"].reasons[-1] == "aggregate max: the best run's value 2.7 is judged"
    assert got["best-up"].verdict == "supported"  # the highest, 2.78, is above 2.77
    assert got["median"].verdict == "supported"
    assert got["median"].reasons[-1] == (
        "the verdict tests the mean of the runs; the claim reports the median"
    )


def test_aggregate_max_of_a_single_run_value_claim_and_median_of_one(lab: Lab) -> None:
    lab.seeds("nano", [2.8217], metric="val/loss")
    got = _audit(
        lab,
        _claim("max", value="2.82", aggregate="max"),
        _claim("med", value="2.82", aggregate="median"),
    )
    assert got["max"].verdict == "supported" and got["med"].verdict == "supported"
    assert got["med"].reasons == [
        "one run: 2.8217 lies within (2.815, 2.825), 2.82 ± rounding 0.005"
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value": "2.8", "below": "3.0"}, "give exactly one of value"),
        ({"below": "3.0", "above": "2.0"}, "got below, above"),
        ({}, "got none"),
        ({"below": "3.0", "spread": 0.1, "spread_type": "std"}, "`below` makes a bound claim"),
        ({"above": "3.0", "margin": 0.1}, "`above` makes a bound claim"),
    ],
)
def test_a_malformed_bound_is_a_problem_of_the_claims_file(
    lab: Lab, fields: dict[str, object], message: str
) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    result = audit(lab.store, lab.claims("claims:\n" + _claim("bad", **fields)))
    assert result.exit_code == 2
    (bad,) = result.claims
    assert bad.verdict == "error" and message in bad.reasons[0], bad.reasons


def test_bound_decimals_are_read_off_the_bound_and_only_shown(lab: Lab) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    got = _audit(
        lab,
        _claim("b", below="3.00", n_seeds=5, varied_sources="[seed]"),
        _claim("e", below="3e0", n_seeds=5, varied_sources="[seed]"),
    )
    assert got["b"].claim is not None and got["b"].claim["decimals"] == 2
    assert got["e"].claim is not None and got["e"].claim["decimals"] == 0
    assert got["b"].verdict == got["e"].verdict == "supported"


def test_reports_draw_and_print_bound_and_single_run_claims(lab: Lab) -> None:
    lab.seeds("nano", LOW, metric="val/loss")
    lab.seeds("solo", [2.8217], metric="val/loss")
    result = audit(
        lab.store,
        lab.claims(
            "claims:\n"
            + _claim("b", below="3.0", n_seeds=5, varied_sources="[seed]")
            + _claim("s", value="2.82", runs="{names: [solo]}")
        ),
    )
    md = render_markdown(result)
    assert "| 1 | b |" in md and "below 3, n=5" in md
    assert "| 2 | s |" in md and "2.82, n=?" in md
    html = render_html(result)
    assert "<title>below 3</title>" in html
    assert "<title>claimed 2.82 ± rounding 0.005</title>" in html
