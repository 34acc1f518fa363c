"""A `--metric` that names nothing says so: a record regex that matched no line is named at
seal with a sample of the output, and a replay `--metric NAME` typo lists the run's metrics
before any replay runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

# Prints its loss the way many training loops do, not the way the regex below expects.
TRAIN = """
import ledger
ledger.seed(0)
for step in range(8):
    print(f"step {step} | train loss {2.0 / (step + 1):.4f} | acc 0.{step}", flush=True)
"""
WRONG = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"
RIGHT = r"step (?P<step>\d+) \| train loss (?P<loss>\S+) \| acc (?P<acc>\S+)"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    init_ledger(root)
    return root


def _record(proj: Path, *metrics: str) -> tuple[str, str]:
    args = [a for m in metrics for a in ("--metric", m)]
    r = run_ledger("record", *args, "--json", "--", sys.executable, "train.py", cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"]), r.stderr


def _runs(proj: Path) -> list[str]:
    return sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir())


def test_a_regex_that_matched_nothing_is_named_at_seal(proj: Path) -> None:
    run_id, err = _record(proj, WRONG, RIGHT)
    warning = (
        "ledger: warning: --metric 'epoch (?P<step>\\d+) loss (?P<loss>\\S+)' matched no line "
        "of the output (8 non-empty line(s)), so it recorded no metric. The output was:\n"
        "    step 0 | train loss 2.0000 | acc 0.0\n"
        "    step 1 | train loss 1.0000 | acc 0.1\n"
        "    step 2 | train loss 0.6667 | acc 0.2\n"
        "    …\n"
        "    step 5 | train loss 0.3333 | acc 0.5\n"
    )
    assert warning in err, err
    assert err.count("ledger: warning: --metric") == 1  # the regex that matched is not named
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)["run"]
    notes = [n for n in shown["notes"] if n.startswith("--metric ")]
    # The note names the regex; the output lines stay in the scrubbed log, not in the record.
    assert notes == [
        "--metric 'epoch (?P<step>\\d+) loss (?P<loss>\\S+)' matched no line of the output "
        "(8 non-empty line(s)): no metric was recorded from it"
    ]
    assert sorted(m["name"] for m in shown["metrics"]) == ["acc", "loss"]


def test_a_regex_that_matches_says_nothing(proj: Path) -> None:
    _, err = _record(proj, RIGHT)
    assert "warning" not in err, err


def test_a_replay_metric_typo_lists_the_metrics_before_any_replay(proj: Path) -> None:
    run_id, _ = _record(proj, RIGHT)
    r = run_ledger("replay", run_id, "--mode", "seeds", "--metric", "perplexity", cwd=proj)
    assert r.returncode == 2, r.stderr
    assert (
        f"ledger: error: --metric 'perplexity': run {run_id} has no metric of that name; its "
        "metrics: acc, loss" in r.stderr
    ), r.stderr
    assert "ledger: hint: give one of them with --metric" in r.stderr
    r = run_ledger("replay", run_id, "--mode", "seeds", "--metric", "los", cwd=proj)
    assert r.returncode == 2 and "ledger: hint: did you mean --metric loss?" in r.stderr, r.stderr
    assert _runs(proj) == [run_id], "a replay ran before the typo was caught"


def test_an_against_run_without_the_metric_is_caught_before_any_replay(proj: Path) -> None:
    run_id, _ = _record(proj, RIGHT)
    other, _ = _record(proj, WRONG)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--metric", "loss", "--against", other, cwd=proj
    )
    assert r.returncode == 2, r.stderr
    assert f"--against {other}: it has no metric of that name; its metrics: none" in r.stderr
    assert _runs(proj) == sorted([run_id, other])
