"""A verdict says what it compared: a program whose result is its printed text is judged on its
stdout, and one with nothing to compare but its exit status says exactly that."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

# A sampler: no metrics, no output files; its result is the text it prints.
SAMPLER = """
import os, random
rng = random.Random(int(os.environ.get("SAMPLE_SEED", "1337")))
words = ["the", "model", "wrote", "this", "sample", "today"]
for _ in range(3):
    print(" ".join(rng.choice(words) for _ in range(8)))
"""
# Prints nothing, writes nothing.
SILENT = "import sys\nsys.exit(0)\n"
# An evaluation script that logs its result with `logging` (to stderr) and prints nothing.
LOGGING = "import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.info('acc 0.9')\n"
# Prints where it read its checkpoint: an absolute path under its working directory, which a
# replay runs somewhere else.
WHERE = """
import os
print("loaded", os.path.abspath("ckpt.pt"), "from", os.getcwd())
print("sample: the cat sat")
"""
# Metrics on stdout beside a line that changes every run: the metrics are compared, not stdout.
TIMED = """
import time
print("epoch 0 loss 0.5")
print(f"took {time.time()!r} s")
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in (
        ("sample", SAMPLER),
        ("silent", SILENT),
        ("timed", TIMED),
        ("logging_only", LOGGING),
        ("where", WHERE),
    ):
        (root / f"{name}.py").write_text(text)
    init_ledger(root)
    return root


def _record(proj: Path, script: str, *args: str) -> str:
    r = run_ledger("record", "--json", *args, "--", sys.executable, script, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(proj: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    r = run_ledger("replay", run_id, "--json", *args, cwd=proj, **env)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


def test_printed_text_is_the_result_and_is_compared(proj: Path) -> None:
    run_id = _record(proj, "sample.py")
    code, v = _replay(proj, run_id)
    assert code == 0 and v["outcome"] == "reproduced", v["summary"]
    assert v["settings"]["compared"] == {
        "metric_values": 0,
        "files": 0,
        "stdout": True,
        "stderr": False,
        "exit_status": True,
    }
    assert "compared stdout and the exit status" in v["summary"]
    assert [f["path"] for f in v["files"]] == ["<stdout>"] and v["files"][0]["status"] == (
        "identical"
    )
    assert "exit-status-only" not in v["labels"]
    # The same facts in the printed verdict.
    r = run_ledger("replay", run_id, cwd=proj)
    assert r.returncode == 0, r.stderr
    assert "REPRODUCED (bitwise)" in r.stdout and "compared stdout and the exit status" in r.stdout


def test_changed_text_is_not_reproduced(proj: Path) -> None:
    run_id = _record(proj, "sample.py")
    code, v = _replay(proj, run_id, "--mode", "tolerance", SAMPLE_SEED="7")
    assert code == 1 and v["outcome"] == "not-reproduced", v["summary"]
    assert v["settings"]["compared"]["stdout"] is True
    assert "stdout: line 1 differs: original " in v["summary"], v["summary"]
    (row,) = v["files"]
    assert row["path"] == "<stdout>" and row["status"] == "different"


def test_nothing_but_the_exit_status_says_so(proj: Path) -> None:
    run_id = _record(proj, "silent.py")
    code, v = _replay(proj, run_id)
    assert code == 0 and v["outcome"] == "reproduced"
    assert v["settings"]["compared"] == {
        "metric_values": 0,
        "files": 0,
        "stdout": False,
        "stderr": False,
        "exit_status": True,
    }
    assert "exit status only" in v["summary"] and "nothing else could be compared" in v["summary"]
    assert "exit-status-only" in v["labels"] and v["files"] == []
    r = run_ledger("replay", run_id, cwd=proj)
    assert r.returncode == 0, r.stderr
    head = [ln for ln in r.stdout.splitlines() if "REPRODUCED" in ln]
    assert len(head) == 1 and head[0].startswith("REPRODUCED (bitwise, exit status only) "), head


def test_metrics_are_compared_and_a_changing_stdout_is_not(proj: Path) -> None:
    run_id = _record(proj, "timed.py", "--metric", r"epoch (?P<step>\d+) loss (?P<loss>\S+)")
    code, v = _replay(proj, run_id)
    assert code == 0 and v["outcome"] == "reproduced", v["summary"]
    assert v["settings"]["compared"]["metric_values"] == 1
    assert v["settings"]["compared"]["stdout"] is False and v["files"] == []
    assert "compared 1 metric value and the exit status" in v["summary"]


def test_a_stderr_only_result_says_stderr_was_not_compared(proj: Path) -> None:
    run_id = _record(proj, "logging_only.py")
    code, v = _replay(proj, run_id)
    assert code == 0 and "exit-status-only" in v["labels"], v["summary"]
    assert "its stderr was not compared" in v["summary"] and "--include-logs" in v["summary"]
    code, v = _replay(proj, run_id, "--include-logs")
    assert code == 0 and v["settings"]["compared"]["stderr"] is True, v["summary"]
    assert "exit-status-only" not in v["labels"]


def test_paths_under_the_working_directory_are_read_as_the_original(proj: Path) -> None:
    run_id = _record(proj, "where.py")
    code, v = _replay(proj, run_id)
    assert code == 0 and v["outcome"] == "reproduced", v["summary"]
    (row,) = v["files"]
    assert row["path"] == "<stdout>" and row["status"] == "identical"
    assert any("read as the original's " + str(proj) in n for n in row["notes"]), row


def test_a_record_without_a_captured_stdout_is_judged_on_what_it_has(proj: Path) -> None:
    """A run record may hold no stdout (the field is optional: a Hydra job run whose output
    the startup hook could not tee, its `.out` file not opened, has none): with no printed
    text to compare, the replay's is not held against it (no `<stdout>` row "missing in
    original", not reproduced), and the sampler is judged on its exit status alone."""
    from ledger.run.find import load_run
    from ledger.run.ids import new_run_id
    from ledger.store import Store

    store = Store.open(proj / ".ledger")
    _, run = load_run(store, _record(proj, "sample.py"))
    assert run.stdout is not None
    bare = run.model_copy(update={"run_id": new_run_id(), "stdout": None})
    store.set_ref(
        f"runs/{bare.run_id}", store.put_json(bare.to_json()), op="seal", status="succeeded"
    )
    code, v = _replay(proj, bare.run_id)
    assert code == 0 and v["outcome"] == "reproduced", v["summary"]
    assert v["settings"]["compared"]["stdout"] is False and v["files"] == []
    assert "exit-status-only" in v["labels"]
