"""The clean-line memo's file (``ledger.capture.secret_memo``): when it is written, where, and what
it holds. Pinned because mutation testing (issue #18) found it untested: a memo with nothing new
is not written, one without a path never is, missing folders are made, at most MAX_LINES
digests are kept (the newest), each a 32-character keyed digest."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.capture.secret_memo import MAX_LINES, CleanMemo


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
