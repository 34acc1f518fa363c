"""Ctrl-C is not a verdict: a real SIGINT sent to the process group of a real
`python -m ledger replay` (or `record`) while the program runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _hang import HANG_ENV, communicate_or_explain
from _support import init_ledger, run_ledger, subprocess_env

from ledger.audit.replays import recorded_replays
from ledger.run.find import load_run
from ledger.store import Store

# Prints its metric, then, when PAUSE is set (only during the replays below), says "ready" and
# waits to be interrupted. PAUSE is not recorded, so the original run finishes at once.
PAUSING = """
import os, sys, time
import ledger
ledger.seed(0)  # seeds mode refuses a program that never reads its seed
print("epoch 0 loss 0.5", flush=True)
if os.environ.get("PAUSE"):
    print("ready", flush=True)
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        sys.exit(1)  # a program that exits 1 on Ctrl-C, as many do
"""
# As PAUSING, but takes a second to shut down once interrupted (as a program saving its state
# on Ctrl-C does), counting the SIGINTs it gets meanwhile, and prints the count.
SAVING = """
import os, signal, sys, time
import ledger
ledger.seed(0)
print("epoch 0 loss 0.5", flush=True)
if os.environ.get("PAUSE"):
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    print("ready", flush=True)
    while not got:
        time.sleep(0.01)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        time.sleep(0.01)
    print("signals", len(got), flush=True)
    sys.exit(1)
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pausing.py").write_text(PAUSING)
    (root / "saving.py").write_text(SAVING)
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def _interrupt(cmd: list[str], cwd: Path, sig: int = signal.SIGINT) -> tuple[int, str]:
    """Start ``ledger CMD`` in a process group of its own, signal the group (SIGINT unless
    told) once the program says "ready", and return the exit code and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *cmd],
        cwd=cwd,
        env=subprocess_env(PAUSE="1", **HANG_ENV),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.endswith(b"ready\n") or not line:  # "[seed N] ready" with --jobs > 1
            break
    time.sleep(0.2)
    os.killpg(proc.pid, sig)
    _, err = communicate_or_explain(proc, 240, "the stopped ledger")
    return proc.returncode, err.decode()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_during_replay_stores_no_verdict_and_audit_keeps_the_last_one(
    repo: Path, tmp_path: Path, sig: int
) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "pausing.py", cwd=repo
    )
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    assert run_ledger("replay", run_id, cwd=repo).returncode == 0  # a completed verdict
    store = Store.open(repo / ".ledger")
    verdicts_before = sorted(n for n, _ in store.refs.iter("verdicts/"))

    ws = tmp_path / "ws"
    ws.mkdir()
    code, err = _interrupt(["replay", run_id, "--workspace-dir", str(ws)], repo, sig)
    assert code == 128 + sig, err
    assert "interrupted" in err and "no verdict was stored" in err and "Traceback" not in err
    assert sorted(n for n, _ in store.refs.iter("verdicts/")) == verdicts_before
    assert list(ws.iterdir()) == []  # its workspace is gone
    # The attempt is on record as an interrupted replay run, nothing more.
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    interrupted = [row for row in rows if row["status"] == "interrupted"]
    assert len(interrupted) == 1
    _, attempt = load_run(store, interrupted[0]["run_id"])
    assert attempt.replay_of == run_id and attempt.interrupted_by == sig
    # The audit's view of the run is still its last completed replay.
    assert recorded_replays(store)[run_id].outcome == "reproduced"
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=repo).stdout)
    assert [v["outcome"] for v in shown["verdicts"]] == ["reproduced"]


def test_audit_ignores_verdicts_of_replays_that_did_not_complete(repo: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from ledger.records.verdict import Verdict

    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "pausing.py", cwd=repo
    )
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    assert run_ledger("replay", run_id, cwd=repo).returncode == 0
    store = Store.open(repo / ".ledger")
    # A newer verdict of a replay that could not run (as an older ledger might store).
    later = Verdict(
        original=run_id,
        replays=["r-none"],
        mode="bitwise",
        outcome="could-not-replay",
        summary="the workspace could not be built",
        created=datetime.now(UTC) + timedelta(hours=1),
    )
    store.set_ref(f"verdicts/{run_id}/r-none", store.put_json(later.to_json()), op="verdict")
    assert recorded_replays(store)[run_id].outcome == "reproduced"


def test_ctrl_c_during_record_exits_130(repo: Path) -> None:
    code, err = _interrupt(["record", "--", sys.executable, "pausing.py"], repo)
    assert code == 130, err  # although the program itself exited 1
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    assert [row["status"] for row in rows] == ["interrupted"]


def test_a_crash_of_the_replay_itself_exits_7_without_a_verdict(
    repo: Path, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "pausing.py", cwd=repo
    )
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    import ledger.replay.compare_outputs as compare_outputs

    def broken(*args: object, **kwargs: object) -> list[dict[str, Any]]:
        raise RuntimeError("comparator bug")

    monkeypatch.setattr(compare_outputs, "compare_run_outputs", broken)
    ws = tmp_path / "ws"
    ws.mkdir()
    res = cli("replay", run_id, "--ledger", str(repo / ".ledger"), "--workspace-dir", str(ws))
    assert res.exit_code == 7, res.stderr
    assert "the replay failed before it could give a verdict" in res.stderr
    assert "comparator bug" in res.stderr
    store = Store.open(repo / ".ledger")
    assert list(store.refs.iter("verdicts/")) == []
    assert list(ws.iterdir()) == []


def test_ctrl_c_during_a_seeds_replay_stops_every_seed(repo: Path, tmp_path: Path) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "pausing.py", cwd=repo
    )
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    ws = tmp_path / "ws"
    ws.mkdir()
    code, err = _interrupt(
        ["replay", run_id, "--mode", "seeds", "--seeds", "3", "--jobs", "2", "--metric", "loss",
         "--workspace-dir", str(ws)],
        repo,
    )  # fmt: skip
    assert code == 130, err
    # The seeds sleep 600 s: they were stopped, not awaited (_interrupt's 240 s deadline).
    store = Store.open(repo / ".ledger")
    assert list(store.refs.iter("verdicts/")) == []
    assert list(ws.iterdir()) == []
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    replays = [row for row in rows if row["run_id"] != run_id]
    assert replays and all(row["status"] == "interrupted" for row in replays)


def test_ctrl_c_signals_a_seed_again_only_every_so_often_while_it_shuts_down(
    repo: Path,
) -> None:
    """A seed still running after Ctrl-C is signalled again every 0.2 s until it ends (one
    that was still building its workspace gets it too), not flooded: a program saving its
    state on Ctrl-C keeps the time to do it."""
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "saving.py", cwd=repo
    )
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    code, err = _interrupt(
        ["replay", run_id, "--mode", "seeds", "--seeds", "2", "--jobs", "2", "--metric", "loss"],
        repo,
    )
    assert code == 130, err
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    counts = []
    for row in rows:
        if row["run_id"] != run_id:
            out = run_ledger("log", row["run_id"], cwd=repo).stdout
            counts += [int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("signals ")]
    # The second of shutting down spans about five repeats (fewer on a busy machine).
    assert counts and all(1 <= n <= 20 for n in counts), counts
