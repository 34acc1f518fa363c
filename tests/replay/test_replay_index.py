"""A replay leaves the index caught up: the replayed run and the verdict are in it when
``ledger replay`` returns (the replay's own record skips the intermediate update; the engine
updates the index once, after the verdict)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

from ledger.index import Index
from ledger.store import Store


def test_replay_leaves_run_and_verdict_indexed(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("print('step 0 loss 0.5')\n")
    (root / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    metric = r"step (?P<step>\d+) loss (?P<loss>\S+)"
    rec = run_ledger(
        "record", "-n", "base", "-m", metric, "--", sys.executable, "train.py", cwd=root
    )
    assert rec.returncode == 0, rec.stderr
    rep = run_ledger("replay", "base", cwd=root)
    assert rep.returncode == 0, rep.stderr
    heading = re.search(r"\) (\S+) → (\S+)", rep.stdout)
    assert heading is not None, rep.stdout
    original, replayed = heading.groups()

    # Read the index as the replay left it: no command ran since to catch it up.
    db = sqlite3.connect(root / ".ledger" / "index.sqlite")
    try:
        runs = {row[0]: row[1] for row in db.execute("SELECT run_id, status FROM runs")}
        verdicts = db.execute("SELECT original FROM verdicts").fetchall()
    finally:
        db.close()
    assert runs == {original: "succeeded", replayed: "succeeded"}
    assert verdicts == [(original,)]
    with Index(Store.open(root / ".ledger")) as index:
        assert index.sync() == 0  # nothing in the log it had not folded
