"""A log file among the outputs is compared only with --include-logs: without it, a log that
differs (a timestamp) does not make a bitwise replay fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

SCRIPT = """
import pathlib, time
out = pathlib.Path("out"); out.mkdir(exist_ok=True)
(out / "train.log").write_text(f"started at {time.time_ns()}\\n")
(out / "model.json").write_text('{"w": 1.5}')
print("epoch 0 loss 0.25", flush=True)
"""


def test_a_differing_log_output_is_ignored_unless_included(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    r = run_ledger(
        "record", "--output", "out/", "--metric", r"epoch (?P<step>\d+) loss (?P<loss>\S+)",
        "--json", "--", sys.executable, "train.py", cwd=root,
    )  # fmt: skip
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    r = run_ledger("replay", run_id, "--json", cwd=root)
    verdict = json.loads(r.stdout)
    assert r.returncode == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    statuses = {f["path"]: f["status"] for f in verdict["files"]}
    assert statuses == {"out/model.json": "identical", "out/train.log": "ignored"}
    r = run_ledger("replay", run_id, "--include-logs", "--json", cwd=root)
    verdict = json.loads(r.stdout)
    assert r.returncode == 1 and "out/train.log" in verdict["summary"]
