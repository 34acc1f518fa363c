"""Comparative claims end to end: real `ledger record` runs of two methods on two games, a
claims file with single-task and multi-task comparisons, `ledger audit` through the CLI.

Each run prints `step 0 return X`, X = game base + method offset + seed noise, so ours beats ppo
by 0.49 on every game with a spread of about 0.09.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

pytestmark = pytest.mark.slow  # twelve recorded runs and a dozen audits: about two minutes

SCRIPT = """
import argparse
p = argparse.ArgumentParser()
p.add_argument("--method"); p.add_argument("--game"); p.add_argument("--seed", type=int)
a = p.parse_args()
base = {"pong": 0.0, "breakout": 10.0}[a.game]
offset = {"ours": 1.0, "ppo": 0.5}[a.method]
noise = [0.0, 0.1, -0.08][a.seed] + (0.01 if a.method == "ppo" else 0.0)
print(f"step 0 return {base + offset + noise!r}", flush=True)
"""

METHODS = """\
paper: "Doe et al. 2026"
methods:
  ours: {names: [ours]}
  ppo: {names: [ppo]}
  ours-pong: {names: [ours], tags: {game: pong}}
  ppo-pong: {names: [ppo], tags: {game: pong}}
  ours-seed0: {names: [ours], tags: {game: pong, seed: "0"}}
claims:
"""

CLAIMS = (
    METHODS
    + """\
  - id: beats-on-pong
    kind: comparison
    source: {table: "3", row: Pong}
    metric: return
    a: ours-pong
    b: ppo-pong
    difference: 0.5
  - id: beats-on-average
    kind: comparison
    metric: return
    a: ours
    b: ppo
    task_tag: game
    tasks: [pong, breakout]
  - id: ppo-beats-ours
    kind: comparison
    metric: return
    a: ppo-pong
    b: ours-pong
  - id: one-seed
    kind: comparison
    metric: return
    a: ours-seed0
    b: ppo-pong
  - id: wrong-metric
    kind: comparison
    metric: score
    a: ours-pong
    b: ppo-pong
"""
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("compare") / "proj"
    project.mkdir()
    (project / "train.py").write_text(SCRIPT)
    (project / ".gitignore").write_text(".ledger/\n*.yaml\n*.html\n*.md\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=project, check=True, env=env)
    init_ledger(project)
    for method in ("ours", "ppo"):
        for game in ("pong", "breakout"):
            for seed in (0, 1, 2):
                r = run_ledger(
                    "record",
                    "--name",
                    method,
                    "--tag",
                    f"game={game}",
                    "--tag",
                    f"seed={seed}",
                    "--metric",
                    r"step (?P<step>\d+) return (?P<return>\S+)",
                    "--",
                    sys.executable,
                    "train.py",
                    "--method",
                    method,
                    "--game",
                    game,
                    "--seed",
                    str(seed),
                    cwd=project,
                )
                assert r.returncode == 0, r.stderr
    return project


def _audit(project: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (project / "claims.yaml").write_text(text)
    r = run_ledger("audit", "claims.yaml", *args, cwd=project)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_verdicts_and_printed_evidence(project: Path) -> None:
    r = _audit(project, CLAIMS, "--markdown", "audit.md", "--html", "audit.html")
    assert r.returncode == 1, r.stdout + r.stderr
    out = " ".join(r.stdout.split())  # the terminal wraps long lines
    assert "1. beats-on-pong (line 9): supported" in out
    assert "2. beats-on-average (line 16): supported" in out
    assert "3. ppo-beats-ours (line 23): contradicted" in out
    assert "4. one-seed (line 28): insufficient" in out
    assert "5. wrong-metric (line 33): error" in out
    # Welch, Mann-Whitney, probability of improvement and the CIs, as numbers.
    assert "difference ours-pong − ppo-pong = 0.49 (mean 1.00667 vs 0.516667, n = 3 vs 3)" in out
    assert "Welch t = 6.654" in out and "Mann–Whitney U = 9 (ours-pong better than ppo-pong)" in out
    assert "P(ours-pong better than ppo-pong) = 1" in out
    assert "claimed difference 0.5 (with rounding 0.45 to 0.55)" in out
    assert "IQM over 2 tasks: ours 6.005 (n = 6) vs ppo 5.515 (n = 6)" in out
    assert "stratified bootstrap CI" in out
    assert "per task (mean ours / ppo, P(better)): breakout 11.01 / 10.52 (1); pong" in out
    assert "excludes 0 on the opposite side" in out
    assert "too few runs with a value (ours-seed0: 1)" in out
    assert "at least 2 runs per method" in out
    assert "unknown metric 'score': the 3 run(s) of method 'ours-pong' record return" in out
    assert "runs of ours-pong:" in out
    assert "5 claim(s): 1 contradicted, 1 error, 1 insufficient, 2 supported." in out
    md = (project / "audit.md").read_text()
    assert "## 3. ppo-beats-ours: contradicted" in md
    assert "| 1 | beats-on-pong | paper Doe et al. 2026, table 3, row Pong | return |" in md
    assert "ours-pong better than ppo-pong by +0.5" in md
    html = (project / "audit.html").read_text()
    assert '<span class="v insufficient">insufficient</span>' in html
    assert "Welch t = 6.654" in html
    assert "(ours, pong)</code>" in html and "(ours-pong)</code>" in html


def test_json_holds_every_statistic(project: Path) -> None:
    r = _audit(project, CLAIMS, "--json")
    assert r.returncode == 1
    claims = {c["id"]: c for c in json.loads(r.stdout)["record"]["claims"]}
    pong = claims["beats-on-pong"]["statistics"]["comparison"]
    assert pong["verdict"] == "supported" and pong["basis"] == "welch"
    assert set(pong["welch"]) >= {"t", "df", "p_two_sided", "ci"}
    assert pong["mann_whitney"]["u"] == 9.0
    assert pong["probability_of_improvement"]["estimate"] == 1.0
    assert pong["difference"] == pytest.approx(0.49)
    used = [e for e in claims["beats-on-pong"]["runs"] if e["used"]]
    assert sorted({e["method"] for e in used}) == ["ours-pong", "ppo-pong"]
    avg = claims["beats-on-average"]["statistics"]["comparison"]
    assert avg["basis"] == "stratified bootstrap" and len(avg["tasks"]) == 2
    assert {e["task"] for e in claims["beats-on-average"]["runs"]} == {"pong", "breakout"}
    assert claims["one-seed"]["verdict"] == "insufficient"


def test_all_supported_exits_0(project: Path) -> None:
    first_two = CLAIMS[: CLAIMS.index("  - id: ppo-beats-ours")]
    r = _audit(project, first_two)
    assert r.returncode == 0, r.stdout
    assert "2 claim(s): 2 supported." in " ".join(r.stdout.split())


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (
            "  - {kind: comparison, metric: return, a: ours, b: sac}\n",
            "line 9: b: unknown method 'sac'; methods defined: ours, ours-pong, ours-seed0, "
            "ppo, ppo-pong",
        ),
        (
            "  - {kind: comparison, a: ours, b: ppo}\n",
            "line 9: metric: required field 'metric' is missing",
        ),
        (
            "  - {kind: comparison, metric: return, a: ours, b: ppo, direction: beter}\n",
            "line 9: direction: Input should be 'better' or 'worse' (got 'beter')",
        ),
        (
            "  - {kind: comparision, metric: return, a: ours, b: ppo}\n",
            "line 9: kind: unknown claim kind 'comparision': use value (the default) or comparison",
        ),
        (
            "  - {kind: comparison, metric: return, a: ours, b: ppo, difference: -0.5}\n",
            "difference -0.5 says ours is worse than ppo (higher_is_better: true), but direction "
            "is better",
        ),
    ],
)
def test_bad_claims_exit_2_with_the_line_and_field(
    project: Path, claim: str, expected: str
) -> None:
    good = "  - {kind: comparison, metric: return, a: ours-pong, b: ppo-pong}\n"
    r = _audit(project, METHODS + claim + good)
    assert r.returncode == 2, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    assert expected in out
    assert "2. claim-2 (line 10): supported" in out  # the good claim is still judged


def test_bad_methods_block_is_a_usage_error(project: Path) -> None:
    text = "methods:\n  ours: {names: [ours], colour: red}\nclaims:\n  - {kind: comparison}\n"
    r = _audit(project, text)
    assert r.returncode == 2
    assert "ledger: error: claims.yaml:2: methods.ours.colour: unknown field 'colour'" in r.stderr
    assert "ledger: hint:" in r.stderr
    r = _audit(project, "methods: [ours]\nclaims:\n  - {kind: comparison}\n")
    assert r.returncode == 2 and "`methods` must be a mapping" in r.stderr
