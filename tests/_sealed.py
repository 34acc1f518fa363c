"""A small real ledger built once per session: two sealed runs and a replay verdict.

Tamper and attestation tests copy it (``copy_project``) and damage the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from _support import init_ledger, run_ledger

TRAIN = """
import os, sys
os.makedirs("out", exist_ok=True)
data = open("data/train.txt").read()
for step in range(3):
    print(f"step {step} loss {1 / (step + 1):.4f}", flush=True)
open("out/model.txt", "w").write(f"weights {len(data)}\\n")
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
"""


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def build_sealed_project(repo: Path) -> dict[str, str]:
    """Build the project and its ledger; returns the run ids ``good``, ``bad``, ``replay``."""
    (repo / "data").mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    (repo / "data" / "train.txt").write_text("a b c\n" * 50)
    (repo / ".gitignore").write_text("out/\n.ledger/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    metric = r"step (?P<step>\d+) loss (?P<loss>\S+)"
    common = ["-i", "data", "-o", "out", "-m", metric]
    good = run_ledger("record", *common, "--", "python", "train.py", cwd=repo)
    assert good.returncode == 0, good.stderr
    bad = run_ledger("record", "-n", "b", "--", "python", "train.py", cwd=repo, EXIT_CODE="3")
    assert bad.returncode == 3, bad.stderr
    (good_id,) = [r["run_id"] for r in _runs(repo) if r["status"] == "succeeded"]
    rep = run_ledger("replay", good_id, cwd=repo)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    runs = _runs(repo)
    (bad_id,) = [r["run_id"] for r in runs if r["name"] == "b"]
    (replay_id,) = [r["run_id"] for r in runs if r["replay_of"] == good_id]
    return {"good": good_id, "bad": bad_id, "replay": replay_id}


def _runs(repo: Path) -> list[dict[str, Any]]:
    r = run_ledger("ls", "--replays", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    runs: list[dict[str, Any]] = json.loads(r.stdout)
    return runs


def copy_project(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
