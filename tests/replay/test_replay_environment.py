"""Replay against a changed environment, and replay leaving the working tree alone (issue #18).

``--strict-env`` refuses to run when a field that can change numerics differs, and without it
the verdict is labelled ``different-environment``; a replay rebuilds the run elsewhere and
never writes into the project, whatever state its tree is in.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

SCRIPT = """
import os
os.makedirs("out", exist_ok=True)
with open("out/result.txt", "w") as f:
    f.write("done\\n")
with open("data.txt") as f:
    base = float(f.read())
for step in range(3):
    print(f"epoch {step} loss {base / (step + 1)!r}", flush=True)
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"


def _git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    r = subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    return r.stdout.decode()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "data.txt").write_text("2.0\n")
    (root / ".gitignore").write_text(".ledger/\nout/\n*.log\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        _git(root, *args)
    init_ledger(root)
    return root


def _record(project: Path, **env: str) -> str:
    r = run_ledger(
        "record",
        "--metric",
        METRIC,
        "--input",
        "data.txt",
        "--output",
        "out",
        "--json",
        "--",
        sys.executable,
        "train.py",
        cwd=project,
        **env,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _verdicts(project: Path, run_id: str) -> list[dict[str, object]]:
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=project).stdout)
    return list(shown["verdicts"])


def test_strict_env_refuses_and_the_default_labels_a_numerics_difference(project: Path) -> None:
    # OMP_PROC_BIND is in the fingerprint (OMP_*) but not among the variables a replay
    # restores; OMP_NUM_THREADS is restored, so a shell with another value is no drift.
    run_id = _record(project, OMP_PROC_BIND="close", OMP_NUM_THREADS="1")

    r = run_ledger(
        "replay", run_id, "--json", cwd=project, OMP_PROC_BIND="close", OMP_NUM_THREADS="3"
    )
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert r.returncode == 0 and verdict["outcome"] == "reproduced", verdict
    assert "different-environment" not in verdict["labels"], verdict["environment_drift"]

    r = run_ledger("replay", run_id, "--strict-env", cwd=project, OMP_PROC_BIND="spread")
    assert r.returncode == 7, (r.stdout, r.stderr)
    assert "ledger: error:" in r.stderr and "OMP_PROC_BIND" in r.stderr
    assert "ledger: hint:" in r.stderr and "--strict-env" in r.stderr
    assert "Traceback" not in r.stderr
    assert len(_verdicts(project, run_id)) == 1  # the refused replay stored nothing

    r = run_ledger("replay", run_id, "--json", cwd=project, OMP_PROC_BIND="spread")
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    # The values still match: labelled, not failed.
    assert r.returncode == 0 and verdict["outcome"] == "reproduced", verdict
    assert "different-environment" in verdict["labels"]
    drift = [d for d in verdict["environment_drift"] if "OMP_PROC_BIND" in d["field"]]
    assert drift and drift[0]["affects_numerics"] is True
    assert (drift[0]["original"], drift[0]["current"]) == ("close", "spread")


def test_the_math_library_s_code_path_is_set_again_as_recorded(project: Path) -> None:
    """MKL_CBWR and MKL_ENABLE_INSTRUCTIONS choose the code path of Intel MKL's math, whose
    bits they change (torch's CPU sqrt of float32 goes through it): a replay from a shell
    that sets other values, or none, runs the command with the recorded ones."""
    settings = "[os.environ.get('MKL_CBWR'), os.environ.get('MKL_ENABLE_INSTRUCTIONS')]"
    with (project / "train.py").open("a") as f:
        f.write(f"with open('out/result.txt', 'a') as f:\n    f.write(repr({settings}))\n")
    _git(project, "commit", "-qam", "write the math library's settings")
    run_id = _record(project, MKL_CBWR="COMPATIBLE", MKL_ENABLE_INSTRUCTIONS="AVX2")
    # Another value in the shell, then none (the tests' own environment sets neither).
    for shell in ({"MKL_CBWR": "AUTO", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}, {}):
        r = run_ledger("replay", run_id, "--json", cwd=project, **shell)
        verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
        assert r.returncode == 0 and verdict["outcome"] == "reproduced", (shell, verdict)
        assert "different-environment" not in verdict["labels"], verdict["environment_drift"]


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file outside .git and .ledger: content hash and mtime."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", ".ledger") or not path.is_file():
            continue
        out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


def test_replay_never_touches_the_working_tree(project: Path) -> None:
    """Modified, staged, untracked, ignored and output files, and the git index and HEAD."""
    run_id = _record(project)
    (project / "data.txt").write_text("3.0\n")  # modified after the run
    (project / "train.py").write_text(SCRIPT + "\nprint('edited')\n")
    _git(project, "add", "train.py")  # a staged change
    (project / "notes.md").write_text("untracked\n")
    (project / "debug.log").write_text("ignored\n")
    (project / "out" / "result.txt").write_text("edited output\n")
    before = _snapshot(project)
    status, head = _git(project, "status", "--porcelain"), _git(project, "rev-parse", "HEAD")
    index = (project / ".git" / "index").read_bytes()

    r = run_ledger("replay", run_id, "--json", cwd=project)
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert r.returncode == 0 and verdict["outcome"] == "reproduced", verdict

    assert _snapshot(project) == before
    assert _git(project, "status", "--porcelain") == status
    assert _git(project, "rev-parse", "HEAD") == head
    assert (project / ".git" / "index").read_bytes() == index
