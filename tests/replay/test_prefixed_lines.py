"""``PrefixedLines``: parallel seeds share the terminal in whole lines, each behind its
``[seed N]`` prefix; a line that never ends is written in pieces of 64 KiB. ``seed_output``
gives a seed's program those lines with ``--jobs`` above 1, its output as written with one."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from ledger.replay.executors import PrefixedLines, seed_output
from ledger.replay.options import ReplayOptions
from ledger.run.execute import execute


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


def test_a_line_reaches_a_buffered_terminal_as_soon_as_it_ends() -> None:
    # A pipe (``ledger replay -j 2 | tee``) is block-buffered: without the flush each seed's
    # lines would show only once 8 KiB had gathered or the replay ended.
    terminal = io.BytesIO()
    out = PrefixedLines(io.BufferedWriter(terminal), "[seed 1] ")
    out.write(b"epoch 0 acc 0.5\n")
    assert terminal.getvalue() == b"[seed 1] epoch 0 acc 0.5\n"


def _replayed_seed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, index: int, jobs: int
) -> tuple[bytes, bytes]:
    """What the terminal shows of seed ``index``'s program (a line, then a line and a word
    on stderr without an end) replayed with ``--jobs``."""
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err))
    program = "import sys; print('epoch 0'); sys.stdout.write('done'); sys.stderr.write('warn')"
    with seed_output(index, ReplayOptions(mode="seeds", jobs=jobs)):
        result = execute(
            [sys.executable, "-c", program],
            cwd=tmp_path,
            env=dict(os.environ),
            stdout_log=tmp_path / "stdout.log",
            stderr_log=tmp_path / "stderr.log",
        )
    assert result.returncode == 0
    return out.getvalue(), err.getvalue()


def test_with_two_jobs_a_seed_s_lines_carry_its_number_and_its_last_line_is_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out, err = _replayed_seed(monkeypatch, tmp_path, index=1, jobs=2)
    assert out == b"[seed 2] epoch 0\n[seed 2] done\n"
    assert err == b"[seed 2] warn\n"


def test_with_one_job_the_program_s_output_is_shown_as_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out, err = _replayed_seed(monkeypatch, tmp_path, index=0, jobs=1)
    assert (out, err) == (b"epoch 0\ndone", b"warn")
