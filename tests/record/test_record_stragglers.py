"""What a command leaves running when it exits is stopped, so the recorder neither waits for it
(it holds the output pipes) nor seals a run that something still writes into."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

from ledger.run.execute import run_processes, stop_stragglers
from ledger.run.find import load_run
from ledger.store import Store


def test_a_backgrounded_job_is_stopped_and_noted(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    # The background sleep lasts an hour: the record returns (within run_ledger's deadline)
    # only if it stopped the job instead of waiting for it.
    r = run_ledger("record", "--json", "--", "sh", "-c", "sleep 3600 & echo started", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(tmp_path / ".ledger"), run_id)
    assert run.status == "succeeded"
    assert any(n.startswith("1 process(es) of the run were still running") for n in run.notes)
    assert run_processes(run_id) == []


def test_a_plain_run_leaves_nothing_to_stop(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    r = run_ledger("record", "--json", "--", "sh", "-c", "echo done", cwd=tmp_path)
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(tmp_path / ".ledger"), run_id)
    assert not any("still running" in n for n in run.notes)


def test_stop_stragglers_finds_only_its_own_run() -> None:
    assert stop_stragglers("20261130T000000-nosuchrun") == []


def test_a_straggler_ignoring_sigterm_is_killed_after_the_grace() -> None:
    run_id = "20261130T000000-stubborn"
    env = {**os.environ, "LEDGER_RUN_ID": run_id}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            " print('ready', flush=True); time.sleep(3600)",
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert stop_stragglers(run_id, grace=0.5) == [proc.pid]
        assert proc.wait(timeout=60) == -signal.SIGKILL  # killed, not waited for an hour
    finally:
        proc.kill()
        proc.communicate()
