"""`ledger record` output handling: --metric patterns RE2 refuses, lines over the cap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.capture.stdout_metrics import SEGMENT_CAP
from ledger.run.find import load_run
from ledger.store import Store


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text("print('step 1 loss 0.5')\n")
    (repo / ".gitignore").write_text(".ledger/\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    init_ledger(repo)
    return repo


def _nothing_recorded(project: Path) -> None:
    store = Store.open(project / ".ledger")
    assert list(store.refs.iter("runs/")) == []
    assert not any((project / ".ledger" / "staging").glob("*"))


@pytest.mark.parametrize(
    "pattern",
    [r"(?P<loss>\d+)\s(?P=loss)", r"loss (?=\d)(?P<loss>\S+)", r"(?<=loss )(?P<loss>\S+)"],
)
def test_a_pattern_re2_cannot_compile_is_refused_before_the_run(
    project: Path, pattern: str
) -> None:
    r = run_ledger("record", "--metric", pattern, "--", sys.executable, "train.py", cwd=project)
    assert r.returncode == 2, r.stderr
    assert f"ledger: error: --metric {pattern!r} is refused: RE2 cannot compile it" in r.stderr
    assert "ledger: hint: --metric patterns use RE2 syntax" in r.stderr
    assert "Traceback" not in r.stderr and "step 1" not in r.stdout
    _nothing_recorded(project)


def test_the_redos_pattern_is_accepted_and_matches(project: Path) -> None:
    (project / "redos.py").write_text("print('a' * 30)\nprint('a' * 5 + 'b')\n")
    r = run_ledger(
        "record", "--json", "--metric", "(?P<loss>(a+)+)b", "--",
        sys.executable, "redos.py", cwd=project,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(project / ".ledger"), run_id)
    # Only "aaaaab" matched (its value is not a number): the 30 a's were looked at and let go.
    assert run.metrics == []
    assert "--metric group 'loss': 1 match(es) were not numbers and were skipped" in run.notes


LONG = f"""
import sys
out = sys.stdout.buffer
out.write(b"loss 9.0 " + b"x" * {SEGMENT_CAP + 1})  # over the cap, no newline yet
out.write(b" loss 8.0\\n")
out.write(b"loss 0.5\\n")
out.write(b"loss 7.0" + b"y" * {2 * SEGMENT_CAP})  # over the cap again, no newline at all
"""


def test_a_line_over_the_cap_is_stored_intact_not_matched_with_one_note(project: Path) -> None:
    (project / "long.py").write_text(LONG)
    r = run_ledger(
        "record", "--json", "--metric", r"loss (?P<loss>[\d.]+)", "--",
        sys.executable, "long.py", cwd=project,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    expected = (
        b"loss 9.0 " + b"x" * (SEGMENT_CAP + 1) + b" loss 8.0\nloss 0.5\n"
        + b"loss 7.0" + b"y" * (2 * SEGMENT_CAP)
    )  # fmt: skip
    assert r.stdout.encode() == expected  # passed through to the terminal
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    store = Store.open(project / ".ledger")
    _, run = load_run(store, run_id)
    assert run.stdout is not None and store.objects.get_bytes(run.stdout) == expected
    series = store.get_json({m.name: m for m in run.metrics}["loss"].series)
    assert series["value"] == [0.5]
    long_notes = [n for n in run.notes if "longer than" in n]
    assert long_notes == [
        f"2 output line(s) longer than {SEGMENT_CAP:,} bytes were stored but not matched "
        "against --metric"
    ]


class _Broken:
    def write(self, chunk: bytes) -> None:
        raise RuntimeError("boom")

    def close(self) -> None:
        raise AssertionError("a dropped sink is not closed")


def test_a_failing_sink_never_stops_the_pump(tmp_path: Path) -> None:
    import os
    import threading

    from ledger.run.execute import execute

    child = "import sys; sys.stdout.buffer.write(b'x' * 1_000_000); print('done')"
    result = []
    t = threading.Thread(
        target=lambda: result.append(
            execute(
                [sys.executable, "-c", child],
                cwd=tmp_path,
                env=dict(os.environ),
                stdout_log=tmp_path / "out.log",
                stderr_log=tmp_path / "err.log",
                stdout_sink=_Broken(),
            )
        ),
        daemon=True,
    )
    t.start()
    t.join(60)  # with a dead pump the child would block on a full pipe forever
    assert result and result[0].returncode == 0
    assert (tmp_path / "out.log").read_bytes() == b"x" * 1_000_000 + b"done\n"
    assert result[0].notes == ["--metric matching stopped on this stream: RuntimeError: boom"]
