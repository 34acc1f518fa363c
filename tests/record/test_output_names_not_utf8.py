"""Output files whose names are not UTF-8 (issue 36, point 7): records hold names as UTF-8, so
such a file is refused, never stored under another name; the run's notes name it by its bytes,
and a replay cannot say REPRODUCED while a file it never compared differs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from _support import init_ledger, run_ledger
from capture.test_secret_corpus import new_repo

from ledger.run.find import load_run
from ledger.store import Store

# Each run writes out/\xff.bin with a count kept outside the repository: the replay's differs.
TRAIN = """\
import os, sys
counter = sys.argv[1]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
os.makedirs("out", exist_ok=True)
open("out/ok.txt", "w").write("same every time\\n")
with open(os.fsencode("out") + b"/\\xff.bin", "wb") as f:
    f.write(b"run %d\\n" % n)
"""


def test_a_non_utf8_output_is_named_and_a_changed_one_is_not_reproduced(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    new_repo(repo, {"train.py": TRAIN, ".gitignore": ".ledger/\nout/\n"})
    init_ledger(repo)
    counter = str(tmp_path / "count")
    (repo / os.fsdecode(b"notes-\xfe.txt")).write_text("an untracked file\n")
    r = run_ledger(
        "record", "--json", "--output", "out", "--", sys.executable, "train.py", counter,
        cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    assert (repo / "out").joinpath(os.fsdecode(b"\xff.bin")).read_bytes() == b"run 1\n"
    r = run_ledger("replay", run_id, cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr  # not reproduced
    text = " ".join(r.stdout.split())
    assert "reproduced (bitwise)" not in text
    assert "not reproduced" in text and "files left out of the original" in text, text
    # the run says so, naming the file by its bytes
    _, run = load_run(Store.open(repo / ".ledger"), run_id)
    (out,) = run.outputs
    assert out.files == 1  # ok.txt; the other is refused, not renamed
    notes = "\n".join(run.notes)
    assert "--output out: left out (1): b'\\xff.bin' (its name is not UTF-8)" in notes, notes
    # an untracked file too: left out of the code, and said by its bytes
    assert "left out (1): b'notes-\\xfe.txt' (its name is not UTF-8)" in notes, notes
