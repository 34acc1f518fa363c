"""The reviewer workflow end to end: record three seeds in repo A, export them, and in a fresh
directory that cannot reach repo A import, verify, replay bitwise and audit with the verdicts
the authors got."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

TRAIN = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
rows = open("data.csv").read().split()
r = random.Random(a.seed * 1000 + len(rows))
for step in range(3):
    print(f"epoch {step} loss {1 / (step + 1) + r.gauss(0, 0.01)!r} acc {0.9 + r.gauss(0, 0.01)!r}")
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)"
CLAIMS = """\
paper: "Reviewer test"
claims:
  - id: acc
    metric: acc
    value: 0.9
    spread: 0.01
    spread_type: std
    n_seeds: 3
    split: test
    varied_sources: [seed]
    runs: {names: [paper]}
"""


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@e",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@e",
    }


def _json(text: str) -> dict[str, object]:
    return json.loads(text[text.index("{") :])  # type: ignore[no-any-return]


def _claims(stdout: str) -> dict[str, tuple[str, list[str], list[str]]]:
    """Each claim's verdict, reasons and the replay verdict of each of its runs."""
    record = _json(stdout)["record"]
    assert isinstance(record, dict)
    return {
        c["id"]: (c["verdict"], c["reasons"], [run["replay"] for run in c["runs"]])
        for c in record["claims"]
    }


@pytest.fixture
def authors(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repoA"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / "data.csv").write_text("x\n1\n2\n3\n")
    (repo / ".gitignore").write_text(".ledger/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=_git_env())
    # Uncommitted work too: the patch must apply onto the carried commit.
    (repo / "train.py").write_text(TRAIN + "print('done')\n")
    init_ledger(repo)
    runs = []
    for seed in (1, 2, 3):
        r = run_ledger(
            "record", "--name", "paper", "--metric", METRIC, "--input", "data.csv", "--json",
            "--", sys.executable, "train.py", "--seed", str(seed), cwd=repo,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        runs.append(str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"]))
    return repo, runs


def test_review_from_a_package_alone(authors: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, runs = authors
    for run_id in runs:
        assert run_ledger("replay", run_id, cwd=repo).returncode == 0
    (repo / "claims.yaml").write_text(CLAIMS)
    original = run_ledger("audit", "claims.yaml", "--json", cwd=repo)
    assert original.returncode in (0, 1), original.stderr
    verdicts_a = _claims(original.stdout)
    assert verdicts_a["acc"][0] == "supported", original.stdout

    pkg = tmp_path / "out" / "paper.ledgerpkg"
    pkg.parent.mkdir()
    r = run_ledger("export", *runs, "-o", str(pkg), cwd=repo)
    assert r.returncode == 0, r.stderr
    r = run_ledger("verify", cwd=repo)  # exporting carried the commit: still a clean ledger
    assert r.returncode == 0, r.stdout
    # The reviewer gets the package and the claims file, nothing else: repo A is gone.
    review = tmp_path / "review"
    review.mkdir()
    shutil.copy(pkg, review / "paper.ledgerpkg")
    shutil.copy(repo / "claims.yaml", review / "claims.yaml")
    shutil.rmtree(repo)

    init_ledger(review)
    r = run_ledger("import", "paper.ledgerpkg", "--json", cwd=review)
    assert r.returncode == 0, r.stderr
    assert sorted(_json(r.stdout)["runs"]) == sorted(runs)  # type: ignore[arg-type]
    r = run_ledger("verify", cwd=review)
    assert r.returncode == 0, r.stdout + r.stderr
    # The audit reads the same runs and the authors' replay verdicts: the same answer.
    r = run_ledger("audit", "claims.yaml", "--json", cwd=review)
    assert r.returncode == original.returncode
    assert _claims(r.stdout) == verdicts_a
    # The reviewer's own replays, bitwise, from the package alone.
    for run_id in runs:
        r = run_ledger("replay", run_id, "--json", cwd=review)
        assert r.returncode == 0, r.stdout + r.stderr
        verdict = _json(r.stdout)
        assert verdict["outcome"] == "reproduced" and verdict["mode"] == "bitwise"
    r = run_ledger("audit", "claims.yaml", "--json", cwd=review)
    assert r.returncode == original.returncode
    assert _claims(r.stdout)["acc"][:2] == verdicts_a["acc"][:2]
    r = run_ledger("verify", cwd=review)
    assert r.returncode == 0, r.stdout + r.stderr
