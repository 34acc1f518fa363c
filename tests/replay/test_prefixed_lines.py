"""``PrefixedLines``: parallel seeds share the terminal in whole lines, each behind its
``[seed N]`` prefix; a line that never ends is written in pieces of 64 KiB."""

from __future__ import annotations

import io

from ledger.replay.executors import PrefixedLines


def test_lines_are_written_whole_behind_the_prefix() -> None:
    dest = io.BytesIO()
    out = PrefixedLines(dest, "[seed 2] ")
    out.write(b"epoch 0 ")
    assert dest.getvalue() == b""  # half a line waits for its end
    out.write(b"acc 0.9\nepoch 1")
    out.finish()
    assert dest.getvalue() == b"[seed 2] epoch 0 acc 0.9\n[seed 2] epoch 1\n"


def test_a_line_without_an_end_is_written_once_it_passes_64_kib() -> None:
    dest = io.BytesIO()
    out = PrefixedLines(dest, "[seed 1] ")
    out.write(b"x" * (1 << 16))
    assert dest.getvalue() == b""  # 64 KiB: still kept
    out.write(b"y")
    assert dest.getvalue() == b"[seed 1] " + b"x" * (1 << 16) + b"y\n"
