"""What a verdict says beside its outcome (``replay/engine.py``): the first output file that
differs and how, a step only one run logged, a program whose printed result vanished on replay,
determinism settings that changed either way, and the numeric environment ``--strict-env``
refuses. Each was a mutant of the engine that no test noticed: a summary that named the wrong
file, or none, and a program that printed nothing on replay judged REPRODUCED. Real `ledger
record` and `ledger replay` in a real project; the program changes its behaviour on replay
through a marker file outside the project, left by the recorded run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger, subprocess_env

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Writes out/a.bin and out/b.csv. On replay, CHANGE decides: "both" changes both files, "csv"
# the table only, "gone" leaves the table unwritten.
OUTPUTS = """
import sys
from pathlib import Path
marker, change = Path(sys.argv[1]), sys.argv[2]
again = marker.exists()
marker.write_text("ran")
Path("out").mkdir(exist_ok=True)
Path("out/a.bin").write_bytes(b"\\x00\\x02" if again and change == "both" else b"\\x00\\x01")
if not (again and change == "gone"):
    acc = "0.75" if again and change in ("both", "csv") else "0.5"
    Path("out/b.csv").write_text(f"step,acc\\n0,{acc}\\n")
"""

# Logs three epochs when recorded and two on replay, the same values; or (quiet) prints its
# result when recorded and nothing on replay.
SHORTER = """
import sys
from pathlib import Path
marker = Path(sys.argv[1])
again = marker.exists()
marker.write_text("ran")
if sys.argv[2] == "steps":
    for step in range(2 if again else 3):
        print(f"epoch {step} acc 0.5")
elif not again:
    print("the cat sat on the mat")
"""

# ledger.torch.deterministic(): warn_only only on replay, or called only when recorded.
DETERMINISM = """
import sys
from pathlib import Path
import ledger.torch
marker = Path(sys.argv[1])
again = marker.exists()
marker.write_text("ran")
if sys.argv[2] == "warn-on-replay":
    ledger.torch.deterministic(warn_only=again)
elif not again:
    ledger.torch.deterministic()
print("epoch 0 acc 0.5")
"""

# Takes the seed and reads the file its argument names.
READER = """
import random, sys
import ledger
ledger.seed()
open(sys.argv[1]).read()
print(f"epoch 0 acc {random.random()!r}")
"""

# Says it started, then waits for the test's go-ahead.
BLOCKS = """
import sys, time
from pathlib import Path
Path(sys.argv[1]).write_text("started")
while not Path(sys.argv[2]).exists():
    time.sleep(0.05)
print("epoch 0 acc 0.5")
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "outputs.py").write_text(OUTPUTS)
    (root / "shorter.py").write_text(SHORTER)
    (root / "det.py").write_text(DETERMINISM)
    (root / "plain.py").write_text('print("epoch 0 acc 0.5")\n')
    (root / "reader.py").write_text(READER)
    (root / "blocks.py").write_text(BLOCKS)
    init_ledger(root)
    return root


def _record(proj: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    r = run_ledger("record", *argv, cwd=proj, **(env or {}))
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(proj: Path, run_id: str, code: int) -> dict[str, object]:
    r = run_ledger("replay", run_id, "--json", cwd=proj)
    assert r.returncode == code, r.stdout + r.stderr
    verdict: dict[str, object] = json.loads(r.stdout)
    return verdict


def test_the_summary_names_the_first_output_file_that_differs_and_both_its_values(
    proj: Path, tmp_path: Path
) -> None:
    marker = str(tmp_path / "marker")
    argv = ("-o", "out", "--json", "--", sys.executable, "outputs.py", marker, "both")
    verdict = _replay(proj, _record(proj, *argv), 1)
    files = verdict["files"]
    assert isinstance(files, list) and [f["status"] for f in files] == ["different"] * 2
    a = files[0]["detail"]
    head = "not reproduced (bitwise; compared 2 files and the exit status): "
    # The first of the two, not the last; a digest's description does not carry the two
    # versions, so they are named after it.
    assert verdict["summary"] == (
        f"{head}2 output file(s) differ, first out/a.bin: {a['description']}: "
        f"original {a['original']}, replay {a['replay']}"
    )
    assert a["description"].startswith("content differs from byte 1")


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        # A table's description names both values already: not twice.
        ("csv", "row 2, column 'acc': 0.5 != 0.75"),
        # No difference to describe: the file's status.
        ("gone", "missing-in-replay"),
    ],
)
def test_one_output_file_that_differs_is_named_with_what_differs(
    proj: Path, tmp_path: Path, change: str, detail: str
) -> None:
    marker = str(tmp_path / "marker")
    argv = ("-o", "out", "--json", "--", sys.executable, "outputs.py", marker, change)
    verdict = _replay(proj, _record(proj, *argv), 1)
    assert verdict["outcome"] == "not-reproduced"
    assert verdict["summary"] == (
        "not reproduced (bitwise; compared 2 files and the exit status): "
        f"1 output file(s) differ, first out/b.csv: {detail}"
    )


def test_a_step_only_the_original_logged_is_named(proj: Path, tmp_path: Path) -> None:
    marker = str(tmp_path / "marker")
    argv = ("--metric", METRIC, "--json", "--", sys.executable, "shorter.py", marker, "steps")
    verdict = _replay(proj, _record(proj, *argv), 1)
    # Every value both logged is equal: the missing step is the difference, not the bytes.
    assert verdict["summary"] == (
        "not reproduced (bitwise; compared 2 metric values and the exit status): "
        "metric acc step 2 only in the original"
    )


def test_a_program_that_prints_its_result_only_when_recorded_is_not_reproduced(
    proj: Path, tmp_path: Path
) -> None:
    """No metric and no output file: its printed text is its result, and on replay it printed
    nothing. That is a difference, not 'nothing to compare'."""
    marker = str(tmp_path / "marker")
    argv = ("--json", "--", sys.executable, "shorter.py", marker, "quiet")
    verdict = _replay(proj, _record(proj, *argv), 1)
    assert verdict["outcome"] == "not-reproduced"
    assert "exit-status-only" not in verdict["labels"]  # type: ignore[operator]
    assert [f["path"] for f in verdict["files"]] == ["<stdout>"]  # type: ignore[union-attr]
    assert verdict["summary"] == (
        "not reproduced (bitwise; compared stdout and the exit status): stdout: line 1 is only "
        "in the original: original 'the cat sat on the mat', replay None"
    )


@pytest.mark.torch
def test_a_determinism_setting_turned_on_by_the_replay_is_noted(proj: Path, tmp_path: Path) -> None:
    """The other direction of test_replay_warns_when_determinism_settings_differ (on when
    recorded, off on replay)."""
    marker = str(tmp_path / "marker")
    argv = ("--metric", METRIC, "--json", "--", sys.executable, "det.py", marker, "warn-on-replay")
    verdict = _replay(proj, _record(proj, *argv), 0)
    assert verdict["labels"] == ["different-determinism-settings"]
    assert verdict["notes"] == [
        "determinism settings differ: rank 0 deterministic_warn_only: False -> True"
    ]


@pytest.mark.torch
def test_a_replay_without_the_determinism_settings_notes_the_first_ten(
    proj: Path, tmp_path: Path
) -> None:
    """Recorded with ledger.torch.deterministic(), replayed without it: each of its settings
    differs from nothing; the note names ten of them, in order."""
    marker = str(tmp_path / "marker")
    argv = ("--metric", METRIC, "--json", "--", sys.executable, "det.py", marker, "recorded-only")
    verdict = _replay(proj, _record(proj, *argv), 0)
    assert verdict["labels"] == ["different-determinism-settings"]
    notes = verdict["notes"]
    assert isinstance(notes, list) and len(notes) == 1
    listed = notes[0].removeprefix("determinism settings differ: ").split("; ")
    assert len(listed) == 10, notes
    assert listed[0].startswith("rank 0 cublas_workspace_config: ")  # the first by name
    assert all(s.startswith("rank 0 ") and s.endswith(" -> None") for s in listed)


def test_strict_env_names_the_first_eight_numeric_variables_that_differ(proj: Path) -> None:
    run_id = _record(proj, "--metric", METRIC, "--json", "--", sys.executable, "plain.py")
    changed = {f"OMP_LEDGER_TEST_{i}": "1" for i in range(1, 10)}
    r = run_ledger("replay", run_id, "--strict-env", cwd=proj, **changed)
    assert r.returncode == 7, r.stdout + r.stderr
    named = ", ".join(f"determinism.env.OMP_LEDGER_TEST_{i}" for i in range(1, 9))
    assert (
        "ledger: error: the environment differs from the recorded one in 9 field(s) that can "
        f"change numerics: {named}\n"
    ) in r.stderr
    assert "OMP_LEDGER_TEST_9" not in r.stderr


def test_a_seeds_verdict_keeps_what_its_replays_noted(proj: Path, tmp_path: Path) -> None:
    """An input named by an absolute path is checked where it lies by each replay, which notes
    it; the seeds verdict carries the note once, beside its own."""
    data = tmp_path / "data.txt"
    data.write_text("rows\n")
    argv = ("--metric", METRIC, "-i", str(data), "--json", "--", sys.executable, "reader.py")
    run_id = _record(proj, *argv, str(data))
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", "--json", cwd=proj)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    verdict = json.loads(r.stdout)
    notes = verdict["notes"]
    note = f"input {data} used in place at {data} (an absolute path; digest verified, not written)"
    assert notes.count(note) == 1, notes
    assert any(n.startswith("the original group is a single run") for n in notes), notes
    # The bootstrap's seed is drawn and kept, so its resamples can be redone from the verdict.
    assert isinstance(verdict["settings"]["bootstrap_seed"], int), verdict["settings"]


def test_a_run_still_being_recorded_is_not_replayed(proj: Path, tmp_path: Path) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    argv = ["record", "--", sys.executable, "blocks.py", str(started), str(go)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv],
        cwd=proj,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        (run_id,) = [p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir()]
        r = run_ledger("replay", run_id, cwd=proj)
        assert r.returncode == 7, r.stdout + r.stderr
        told = f"ledger: error: run {run_id} is still running (or was abandoned); not replayable"
        assert told in r.stderr, r.stderr
    finally:
        go.touch()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()
    assert [p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir()] == [run_id]
