"""A small multi-seed experiment and four claims about it, each with the verdict it deserves."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from _audit_lab import Lab
from typer.testing import CliRunner

from ledger.audit import AuditResult, audit, load_audit, render_markdown
from ledger.cli.audit_cmds import register
from ledger.records.audit import Audit
from ledger.records.base import record_from_json

MAIN = [91.2 + d for d in (-0.3, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.3)]  # mean 91.2, sd 0.20
EARLY = [90.0 + d for d in (-0.2, -0.1, 0.0, 0.1, 0.2)]  # sd 0.16
SMALL = [90.0, 90.6, 91.2]  # mean 90.6, sd 0.6

CLAIMS = """\
paper: "Doe et al. 2026"
claims:
  - id: true-claim
    metric: test/acc
    value: 91.2
    spread: 0.2
    spread_type: std
    n_seeds: 8
    split: test
    varied_sources: [seed]
    runs: {names: [resnet]}
    source: {table: "2", row: ResNet}
  - id: best-seed-as-mean
    metric: test/acc
    value: 91.5
    spread: 0.2
    spread_type: std
    n_seeds: 8
    split: test
    varied_sources: [seed]
    runs: {names: [resnet]}
  - id: test-early-stopping
    metric: test/acc
    value: 90.0
    spread: 0.2
    spread_type: std
    n_seeds: 5
    split: test
    varied_sources: [seed]
    runs: {tags: {exp: early}}
  - id: too-few-seeds
    metric: test/acc
    value: 90.6
    spread: 0.6
    spread_type: std
    n_seeds: 3
    split: test
    varied_sources: [seed, data order]
    runs: {names: [small]}
"""


@pytest.fixture
def experiment(lab: Lab) -> Path:
    lab.seeds("resnet", MAIN)
    lab.seeds("early", EARLY, tags={"exp": "early", "early_stopping": "test"})
    lab.seeds("small", SMALL)
    return lab.claims(CLAIMS)


def _by_id(result: AuditResult) -> dict[str, object]:
    return {c.id: c for c in result.claims}


def test_each_claim_gets_its_verdict_and_reasons(lab: Lab, experiment: Path) -> None:
    result = audit(lab.store, experiment)
    got = {c.id: c for c in result.claims}
    assert {k: c.verdict for k, c in got.items()} == {
        "true-claim": "supported",
        "best-seed-as-mean": "not_reproducible",
        "test-early-stopping": "not_reproducible",
        "too-few-seeds": "inconclusive",
    }
    true = got["true-claim"]
    assert true.values == pytest.approx(MAIN)
    assert [r.run_id for r in true.runs] == [f"resnet-{i:02d}" for i in range(8)]
    assert all(r.replay == "no replay recorded" for r in true.runs)
    assert true.source == {"paper": "Doe et al. 2026", "table": "2", "row": "ResNet"}
    assert "lies inside" in true.reasons[0]

    inflated = got["best-seed-as-mean"]
    failed = {c.name for c in inflated.checks if c.passed is False}
    assert failed == {"value_rounds", "not_best_seed"}
    assert any("best seed" in r for r in inflated.reasons)

    early = got["test-early-stopping"]
    assert [c.name for c in early.checks if c.passed is False] == ["no_test_selection"]
    assert any("early_stopping=test" in r and "test split" in r for r in early.reasons)

    few = got["too-few-seeds"]
    assert few.seeds_needed is not None and few.seeds_needed > 3
    assert all(c.passed is not False for c in few.checks)
    assert f"about {few.seeds_needed} seeds" in few.reasons[-1]

    assert result.exit_code == 1
    assert result.record.counts == {"inconclusive": 1, "not_reproducible": 2, "supported": 1}


def test_the_audit_is_stored_with_the_claims_file(lab: Lab, experiment: Path) -> None:
    result = audit(lab.store, experiment)
    assert lab.store.refs.get(f"audits/{result.id}") == result.oid
    stored = record_from_json(lab.store.get_json(result.oid), Audit)
    assert stored == result.record
    assert lab.store.objects.get_bytes(stored.claims_file) == experiment.read_bytes()
    assert load_audit(lab.store, result.id[:12]).record == result.record
    assert "| 1 | true-claim |" in render_markdown(result)


def test_only_supported_claims_exit_zero(lab: Lab, experiment: Path) -> None:
    only_true = lab.claims(CLAIMS.split("  - id: best-seed-as-mean")[0], "true.yaml")
    assert audit(lab.store, only_true).exit_code == 0


def test_cli_exit_codes_and_reports(lab: Lab, experiment: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:  # a group, so the command is invoked by name as in `ledger audit`
        pass

    runner = CliRunner()
    ledger_dir = str(lab.store.root)
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    res = runner.invoke(
        app,
        ["audit", str(experiment), "-L", ledger_dir, "--html", str(html), "--markdown", str(md)],
    )
    assert res.exit_code == 1, res.output
    assert "supported" in res.output and "not reproducible" in res.output
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert "## 2. best-seed-as-mean: not reproducible" in md.read_text()

    only_true = lab.claims(CLAIMS.split("  - id: best-seed-as-mean")[0], "true.yaml")
    res = runner.invoke(app, ["audit", str(only_true), "-L", ledger_dir, "--json"])
    assert res.exit_code == 0, res.output
    assert '"verdict": "supported"' in res.output

    text = CLAIMS.replace("value: 90.6", "value: ninety")
    line = text.splitlines().index("    value: ninety") + 1
    res = runner.invoke(app, ["audit", str(lab.claims(text, "bad.yaml")), "-L", ledger_dir])
    assert res.exit_code == 2, res.output  # the claims file has a mistake
    assert f"line {line}: value: Input should be a valid number" in res.output
    assert res.output.count("not reproducible") >= 2  # the other claims were still judged
