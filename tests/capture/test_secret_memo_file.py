"""The clean-line memo's file (``ledger.capture.secret_memo``): when it is written, where, and what
it holds. Pinned because mutation testing (issue #18) found it untested: a memo with nothing new
is not written, one without a path never is, missing folders are made, at most MAX_LINES
digests are kept (the newest), each a 32-character keyed digest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.capture.secret_memo import MAX_LINES, CleanMemo

REPO = Path(__file__).resolve().parents[2]
_NO_CACHE = shutil.ignore_patterns("__pycache__")


def test_nothing_new_writes_nothing_and_no_path_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "memo"
    memo = CleanMemo.load(path)
    memo.save()
    assert not path.exists()
    nowhere = CleanMemo.load(None)
    nowhere.add("lr = 0.1")
    nowhere.save()  # no error, nothing written
    assert "lr = 0.1" in nowhere


def test_the_memo_is_written_once_into_folders_made_for_it(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "deeper" / "memo"
    memo = CleanMemo.load(path)
    memo.add("lr = 0.1")
    memo.save()
    data = json.loads(path.read_bytes())
    assert data["tag"] == memo.tag and len(memo.tag) == 32
    (digest,) = data["clean"]
    assert len(digest) == 32 and int(digest, 16) >= 0
    path.write_text("untouched")  # saved already: a second save has nothing to write
    memo.save()
    assert path.read_text() == "untouched"
    again = CleanMemo.load(tmp_path / "cache" / "memo2")  # the folder exists now
    again.add("x")
    again.save()
    assert (tmp_path / "cache" / "memo2").is_file()


def test_only_the_newest_lines_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "memo"
    memo = CleanMemo.load(path)
    for i in range(MAX_LINES + 1):
        memo.add(f"line {i}")
    memo.save()
    reloaded = CleanMemo.load(path)
    assert len(json.loads(path.read_bytes())["clean"]) == MAX_LINES == 8192
    assert "line 0" not in reloaded and f"line {MAX_LINES}" in reloaded and "line 1" in reloaded


@pytest.mark.parametrize("rules", ["secrets.py", "redact.py"])
def test_an_edit_of_the_rules_drops_the_memo(tmp_path: Path, rules: str) -> None:
    # A copy of the package whose rule file is then edited, as a developer checkout would be:
    # lines found clean under the old rules must be judged again under the new ones.
    shutil.copytree(REPO / "ledger", tmp_path / "pkg" / "ledger", ignore=_NO_CACHE)
    store = tmp_path / "store"
    remember = (  # run from tmp_path: `python -c` puts the working directory first on the path
        "from pathlib import Path; from ledger.capture.secret_memo import CleanMemo\n"
        f"m = CleanMemo.for_store(Path({str(store)!r}))\n"
        "print('lr = 0.1' in m, m.tag); m.add('lr = 0.1'); m.save()\n"
    )

    def run() -> str:
        env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
        done = subprocess.run(
            [sys.executable, "-c", remember],
            env=env, cwd=tmp_path, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    # The tag is made of the rules' content, not of where they are: this copy's is ours.
    here = CleanMemo.load(None).tag
    assert run().split() == ["False", here]
    assert run().split() == ["True", here]  # remembered while the rules stay as they are
    with (tmp_path / "pkg" / "ledger" / "capture" / rules).open("a") as f:
        f.write("\n# a rule changed\n")
    remembered, tag = run().split()
    assert remembered == "False" and tag != here
