"""``ledger log`` shows a run's output as every command shows user text: control characters but
newline and tab escaped, so a log holding an OSC title, a colour, a clear-screen or a carriage
return cannot drive the terminal it is read on; ``--raw`` gives the bytes as captured."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import make_project, on_a_terminal, run_ids
from _support import subprocess_env

from ledger.cli._output import VisibleWriter

PRINTED = (
    b"plain line\n"
    b"\x1b]0;pwned\x07\x1b[31mred\x1b[0m\ttab\r\n"
    b"\x1b[2J\xc2\x9b2Jgone\rfake\n"
    b"caf\xc3\xa9 \xff end\n"
)
SHOWN = (
    "plain line\n"
    "\\x1b]0;pwned\\x07\\x1b[31mred\\x1b[0m\ttab\\x0d\n"
    "\\x1b[2J\\x9b2Jgone\\x0dfake\n"
    "café \ufffd end\n"
)
SCRIPT = f"import sys; sys.stdout.buffer.write({PRINTED!r})"


def _ledger(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_project(tmp_path_factory.mktemp("log"))
    r = _ledger("record", "--", sys.executable, "-c", SCRIPT, cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo


def test_log_escapes_control_characters(repo: Path) -> None:
    r = _ledger("log", run_ids(repo)[0], cwd=repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == SHOWN


def test_log_on_a_terminal_sends_no_escape_sequence(repo: Path) -> None:
    rc, out = on_a_terminal(["log", run_ids(repo)[0]], repo)
    assert rc == 0, out
    assert b"\x1b" not in out and b"\x07" not in out and b"\xc2\x9b" not in out, out
    assert b"\\x1b]0;pwned\\x07" in out


def test_log_raw_writes_the_bytes_as_captured(repo: Path) -> None:
    r = _ledger("log", "--raw", run_ids(repo)[0], cwd=repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout == PRINTED


def test_a_character_split_between_reads_is_kept_whole() -> None:
    out = io.StringIO()
    w = VisibleWriter(out)
    data = "é\x1b".encode()
    for i in range(len(data)):
        w.write(data[i : i + 1])
    w.write(b"\xe2\x82")  # the start of a character that never ends
    w.close()
    assert out.getvalue() == "é\\x1b\ufffd"
