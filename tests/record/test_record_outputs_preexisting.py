"""Files already in an --output folder that the run did not write are not its outputs: they are
named as pre-existing, never stored as outputs, never compared by replay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger, subprocess_env

from ledger.run.find import load_run
from ledger.store import Store

WRITER = """
import os, sys, time
os.makedirs("out", exist_ok=True)
open("out/model.txt", "w").write("weights 1\\n")
open("out/same.txt", "w").write("unchanged bytes\\n")  # rewritten with its old content
print("epoch 0 loss 0.5", flush=True)
if os.environ.get("PAUSE"):
    print("ready", flush=True)
    time.sleep(60)
open("out/late.txt", "w").write("written after the pause\\n")
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "writer.py").write_text(WRITER)
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    # Left over from earlier work: a stale checkpoint, a stale event file, and a file the run
    # will rewrite with the same bytes.
    (root / "out" / "old").mkdir(parents=True)
    (root / "out" / "old" / "ckpt-3.txt").write_text("stale\n")
    (root / "out" / "events.out.tfevents.1.host").write_bytes(b"")
    (root / "out" / "same.txt").write_text("unchanged bytes\n")
    past = time.time() - 3600
    for p in (root / "out").rglob("*"):
        os.utime(p, (past, past))
    return root


def _tree_paths(store: Store, oid: str | None) -> list[str]:
    if oid is None:
        return []
    return sorted(e["path"] for e in store.get_json(oid)["entries"])


def test_preexisting_files_are_named_not_captured(repo: Path) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--output", "out", "--json", "--", sys.executable,
        "writer.py", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    (out,) = run.outputs
    assert _tree_paths(store, out.tree) == ["late.txt", "model.txt", "same.txt"]
    assert out.files == 3
    assert out.preexisting == ["events.out.tfevents.1.host", "old/ckpt-3.txt"]
    assert out.n_preexisting == 2
    shown = run_ledger("show", run_id, cwd=repo).stdout
    assert "2 pre-existing file(s), not written by the run" in shown
    assert "old/ckpt-3.txt" in shown
    assert json.loads(run_ledger("show", run_id, "--json", cwd=repo).stdout)["run"]["outputs"][0][
        "preexisting"
    ] == ["events.out.tfevents.1.host", "old/ckpt-3.txt"]

    # Replay: the workspace has no stale files (out/ is ignored); only what was written counts.
    r = run_ledger("replay", run_id, "--json", cwd=repo)
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert r.returncode == 0, verdict["summary"]
    assert sorted(f["path"] for f in verdict["files"]) == [
        "out/late.txt",
        "out/model.txt",
        "out/same.txt",
    ]


def test_a_ctrl_c_run_lists_only_what_it_wrote(repo: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", "record", "--output", "out", "--json", "--",
         sys.executable, "writer.py"],
        cwd=repo,
        env=subprocess_env(PAUSE="1"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    while (line := proc.stdout.readline()) and line != b"ready\n":
        pass
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = json.loads(err.decode().strip().splitlines()[-1])["run_id"]
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    assert run.status == "interrupted"
    (out,) = run.outputs
    assert _tree_paths(store, out.tree) == ["model.txt", "same.txt"]
    assert out.n_preexisting == 2


def test_an_output_file_the_run_did_not_write(repo: Path) -> None:
    r = run_ledger(
        "record", "--output", "out/old/ckpt-3.txt", "--json", "--", sys.executable, "-c", "pass",
        cwd=repo,
    )  # fmt: skip
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(repo / ".ledger"), run_id)
    (out,) = run.outputs
    assert out.files == 0 and out.preexisting == ["ckpt-3.txt"] and not out.missing


def test_stale_event_files_are_not_read(repo: Path) -> None:
    # An unreadable event file from an old, crashed run once made the recorder fail to seal.
    (repo / "out" / "events.out.tfevents.0.host").write_bytes(b"\xff" * 64)
    r = run_ledger("record", "--output", "out", "--", sys.executable, "writer.py", cwd=repo)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
