"""``ledger audit --replay`` with the real replayer, not a stub (issue #18).

Three recorded seeds behind one claim; the audit replays each bit for bit. A deterministic
script reproduces; with noise in the replays every run fails to and the claim is not
reproducible (exit 1), and each replay's verdict is stored with its run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

SCRIPT = """
import argparse, os, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
noise = random.random() * 1e-9 if os.environ.get("NOISE") else 0.0
print(f"epoch 0 acc {0.5 + a.seed * 0.01 + noise!r}", flush=True)
"""
CLAIMS = """
paper: "issue 18"
claims:
  - id: acc
    metric: acc
    higher_is_better: true
    value: 0.52
    spread: 0.01
    spread_type: std
    n_seeds: 3
    split: test
    varied_sources: [seed]
    runs: {names: [net]}
"""


def _audit(project: Path, **env: str) -> tuple[int, dict[str, object]]:
    r = run_ledger("audit", "claims.yaml", "--replay", "--json", cwd=project, **env)
    # The replayed commands' own output comes first on stdout; the report is the JSON after it.
    claim = json.loads(r.stdout[r.stdout.index("{\n") :])["record"]["claims"][0]
    return r.returncode, claim


def test_audit_replay_runs_the_real_replays(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(SCRIPT)
    (project / "claims.yaml").write_text(CLAIMS)
    (project / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=project, check=True, env=env)
    init_ledger(project)
    run_ids = []
    for seed in (1, 2, 3):
        r = run_ledger(
            "record",
            "--name",
            "net",
            "--metric",
            r"epoch (?P<step>\d+) acc (?P<acc>\S+)",
            "--json",
            "--",
            sys.executable,
            "train.py",
            "--seed",
            str(seed),
            cwd=project,
        )
        assert r.returncode == 0, r.stderr
        run_ids.append(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])

    code, claim = _audit(project)
    used = [r for r in claim["runs"] if r["used"]]  # type: ignore[union-attr, index]
    assert sorted(r["run_id"] for r in used) == sorted(run_ids)
    assert all(r["replay"] == "reproduced" for r in used), used
    assert all("(bitwise)" in r["replay_detail"] for r in used)
    assert claim["verdict"] != "not_reproducible"
    checks = {c["name"]: c["passed"] for c in claim["checks"]}  # type: ignore[union-attr, index]
    assert checks["runs_reproducible"] is True

    code, claim = _audit(project, NOISE="1")
    assert code == 1
    assert claim["verdict"] == "not_reproducible"
    used = [r for r in claim["runs"] if r["used"]]  # type: ignore[union-attr, index]
    assert all(r["replay"] == "not-reproduced" for r in used), used
    assert "first divergence at acc step 0" in used[0]["replay_detail"]

    # Each replay the audit ran is a stored verdict of its run, newest last.
    shown = json.loads(run_ledger("show", run_ids[0], "--json", cwd=project).stdout)
    assert [v["outcome"] for v in shown["verdicts"]] == ["reproduced", "not-reproduced"]
