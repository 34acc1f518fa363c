"""Output files in a verdict are labelled by their path as the user knows it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

WRITE = """
import os
os.makedirs("out", exist_ok=True)
os.makedirs("sub", exist_ok=True)
open("out/layout.txt", "w").write("x")
open("sub/single.txt", "w").write("y")
open("top.txt", "w").write("z")
"""


def test_output_files_are_labelled_by_their_path(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "w.py").write_text(WRITE)
    (repo / ".gitignore").write_text(".ledger/\nout/\nsub/\ntop.txt\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e",
                 "commit", "-qm", "i"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    init_ledger(repo)
    rec = run_ledger(
        "record", "-o", "out", "-o", "sub/single.txt", "-o", "top.txt", "--json", "--",
        sys.executable, "w.py", cwd=repo,
    )  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    run_id = json.loads(rec.stderr.strip().splitlines()[-1])["run_id"]
    rep = run_ledger("replay", run_id, "--json", cwd=repo)
    assert rep.returncode == 0, rep.stderr
    labels = sorted(f["path"] for f in json.loads(rep.stdout)["files"])
    # A substring test labelled out/layout.txt as layout.txt, and sub/single.txt twice over.
    assert labels == ["out/layout.txt", "sub/single.txt", "top.txt"]
