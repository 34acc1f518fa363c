"""A process killed (SIGKILL) while it copies inputs into the store leaves a ledger that
``ledger verify`` finds sound: no object under an id its content does not hash to, and no
published record linking an object that is not there (docs/format.md, "Write ordering")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_ledger, subprocess_env

from ledger.capture.data import digest_input, store_inputs
from ledger.capture.statcache import StatCache
from ledger.store import Store

N_FILES = 1500

# Digests the input, says so, then copies it: the parent kills it somewhere in the copy.
CHILD = """
import sys
from pathlib import Path
from ledger.capture.data import digest_input, store_inputs
from ledger.capture.statcache import StatCache
from ledger.store import Store
store = Store.open(sys.argv[1])
d = digest_input(Path(sys.argv[2]), StatCache(), dvc=False)
print("copying", flush=True)
store_inputs([d], store)
print("done", flush=True)
"""


def _dataset(root: Path) -> None:
    for i in range(N_FILES):
        d = root / f"{i // 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        # Distinct and incompressible, small enough to go through the batch writer.
        (d / f"{i:04d}.bin").write_bytes(i.to_bytes(4, "big") + os.urandom(6000))


def _objects(store: Store) -> list[str]:
    return list(store.objects)


def _verify(ledger: Path) -> list[dict[str, str]]:
    proc = run_ledger("verify", "--ledger", str(ledger), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    problems: list[dict[str, str]] = json.loads(proc.stdout)["problems"]
    return problems


def _kill_when(proc: subprocess.Popen[str], ready: float, delay: float, store: Store) -> None:
    """SIGKILL ``proc`` ``delay`` s after it started copying, or as soon as any object of
    the copy has a name if ``delay`` is negative."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if delay >= 0 and time.monotonic() >= ready + delay:
            break
        if delay < 0 and len(_objects(store)) > 0:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.parametrize("delay", [-1.0, 0.0, 0.05, 0.2, 0.5])
def test_a_copy_killed_at_any_point_leaves_a_sound_ledger(tmp_path: Path, delay: float) -> None:
    data = tmp_path / "data"
    _dataset(data)
    store = Store.init(tmp_path / ".ledger")
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store.root), str(data)],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "copying"
        _kill_when(proc, time.monotonic(), delay, store)

    assert _verify(store.root) == []
    for oid in _objects(store):  # no partial object under any id (verify re-hashes too)
        store.objects.verify(oid)
    # The next copy completes what the killed one left, and the ledger is still sound.
    report = store_inputs([digest_input(data, StatCache(), dvc=False)], store)
    assert report.stored + report.skipped == N_FILES and not report.changed
    assert _verify(store.root) == []
    assert len(_objects(store)) == N_FILES + 1  # every file, and the directory's listing


def test_a_recorder_killed_while_copying_inputs_links_no_missing_object(
    tmp_path: Path,
) -> None:
    """The running record's contract links the input's listing: it is stored before the ref
    that reaches it is published, not at the end of the copy."""
    data = tmp_path / "data"
    _dataset(data)
    ledger = tmp_path / ".ledger"
    Store.init(ledger)
    pid_file = tmp_path / "command.pid"
    command = (
        "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid())); "
        "time.sleep(120)"
    )
    argv = ["record", "--ledger", str(ledger), "--input", str(data), "--"]
    recorder = subprocess.Popen(
        [sys.executable, "-m", "ledger", *argv, sys.executable, "-c", command],
        env=subprocess_env(PID_FILE=str(pid_file)),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = Store.open(ledger)
    runs = ledger / "refs" / "runs"
    try:
        deadline = time.monotonic() + 60
        # Killed as soon as the running record is published: the copy has just begun.
        while not (runs.is_dir() and any(runs.iterdir())):
            assert recorder.poll() is None and time.monotonic() < deadline
            time.sleep(0.001)
        recorder.send_signal(signal.SIGKILL)
        recorder.wait(timeout=30)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait(timeout=30)
        time.sleep(0.5)  # a command launched just before the kill has written its pid by now
        if pid_file.exists() and pid_file.read_text():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            time.sleep(0.2)  # the lease it inherited is dropped when it is gone
    problems = _verify(ledger)
    assert [p for p in problems if p["kind"] != "abandoned-staging"] == []
    for oid in _objects(store):
        store.objects.verify(oid)
