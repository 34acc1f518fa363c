"""What a replay cannot keep equal, with plain programs (issue #32, point 9): a metric that
measures the clock is listed beside the verdict, not compared (by name, or declared with
``--timing-metric``); an output naming a path under the working tree is compared after the
tree's root is mapped to the workspace's, from the repository root or a folder below it, while
a path elsewhere is compared as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

SCRIPT = """
import json, os, sys, time
import ledger

t0 = time.perf_counter_ns()
for step in range(3):
    ledger.log(step=step, loss=1.0 / (step + 1))
    # a timing, by its name, and one only the user knows is a timing
    ledger.log(step=step, step_time=(time.perf_counter_ns() - t0) + step * 1e-9 + os.getpid())
    ledger.log(step=step, wall=float(os.getpid() + time.perf_counter_ns()))
os.makedirs("out", exist_ok=True)
with open("out/state.json", "w") as f:
    json.dump({"best": os.path.join(os.getcwd(), "out", "best.ckpt"),
               "elsewhere": os.environ.get("ELSEWHERE", "/nowhere"), "epoch": 3}, f)
"""


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "train.py").write_text(SCRIPT)
    (root / "sub" / "train.py").write_text(SCRIPT)
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        _git(root, *args)
    init_ledger(root)
    return root


def _record(cwd: Path, **env: str) -> str:
    r = run_ledger(
        "record", "--output", "out", "--json", "--", sys.executable, "train.py", cwd=cwd, **env
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(cwd: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=cwd, **env)
    assert "{\n" in r.stdout, r.stderr[-3000:]
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


@pytest.mark.parametrize("where", [".", "sub"])
def test_timings_beside_the_verdict_and_paths_mapped(repo: Path, where: str) -> None:
    cwd = repo / where
    run_id = _record(cwd)
    original = json.loads((cwd / "out" / "state.json").read_text())
    assert original["best"].startswith(str(cwd))

    code, verdict = _replay(cwd, run_id, "--timing-metric", "wa*")
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict["summary"]
    assert verdict["settings"]["not_compared"] == {"step_time": "timing", "wall": "timing"}
    assert verdict["summary"].endswith("; not compared: step_time, wall (timing)")
    assert verdict["settings"]["compared"]["metric_values"] == 3  # loss only
    (row,) = [f for f in verdict["files"] if f["path"] == "out/state.json"]
    assert row["status"] == "identical" and row["total"] == 3
    assert row["notes"][0].startswith("1 path(s) equal once mapped: paths under ")

    # Undeclared, the user's own timing is compared, and differs.
    code, verdict = _replay(cwd, run_id)
    assert (code, verdict["outcome"]) == (1, "not-reproduced")
    assert "first divergence at wall step 0" in verdict["summary"]
    assert verdict["settings"]["not_compared"] == {"step_time": "timing"}


def test_a_path_outside_the_tree_is_compared_as_written(repo: Path, tmp_path: Path) -> None:
    run_id = _record(repo, ELSEWHERE=str(tmp_path / "a"))
    code, verdict = _replay(repo, run_id, "--timing-metric", "wall", ELSEWHERE=str(tmp_path / "b"))
    assert (code, verdict["outcome"]) == (1, "not-reproduced")
    summary = verdict["summary"]
    assert f"out/state.json: elsewhere: '{tmp_path / 'a'}' != '{tmp_path / 'b'}'" in summary
    assert summary.count(str(tmp_path / "a")) == 1  # each value once, not repeated
