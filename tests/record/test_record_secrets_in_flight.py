"""Secrets known at launch never reach the disk, not even while the run is in flight."""

from __future__ import annotations

import base64
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

KEY = "zq8Hv2LmXn4Rt"
PASSWORD = "hunter2xyz"
CHILD = r"""
import base64, os, sys, time
key = os.environ["MY_API_KEY"]
print("key is", key, flush=True)
sys.stderr.write("b64 " + base64.b64encode(key.encode()).decode() + "\n")
sys.stderr.write("hex " + key.encode().hex() + "\r")  # a progress-bar line, no newline
sys.stderr.flush()
sys.stdout.write("split " + key[:5]); sys.stdout.flush()
time.sleep(0.3)
sys.stdout.write(key[5:] + "\n")
print("argv", sys.argv[1:], flush=True)
with open(sys.argv[-1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(60)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text(CHILD)
    (repo / ".gitignore").write_text(".ledger/\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    init_ledger(repo)
    return repo


def _forms() -> list[bytes]:
    raw = KEY.encode()
    return [raw, base64.b64encode(raw), raw.hex().encode(), PASSWORD.encode(), raw[:5] + b"\n"]


def test_sigkilled_recorder_leaves_no_secret_in_staging(project: Path, tmp_path: Path) -> None:
    ready = tmp_path / "child.pid"
    recorder = subprocess.Popen(
        [sys.executable, "-m", "ledger", "record", "--",
         sys.executable, "train.py", "--password", PASSWORD, str(ready)],
        cwd=project,
        env=subprocess_env(MY_API_KEY=KEY),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the child never got going"
        time.sleep(0.3)  # the pump writes what the child printed
        recorder.send_signal(signal.SIGKILL)
        recorder.wait()
    finally:
        if ready.exists() and ready.read_text():
            os.kill(int(ready.read_text()), signal.SIGKILL)
        if recorder.poll() is None:
            recorder.kill()
    (staging,) = (project / ".ledger" / "staging").iterdir()
    logs = {p.name: p.read_bytes() for p in staging.rglob("*") if p.is_file()}
    stdout, stderr = logs["stdout.log"], logs["stderr.log"]
    # What was printed is there (this is not passing because the logs are empty) ...
    assert b"key is [REDACTED:MY_API_KEY]\n" in stdout
    assert b"split [REDACTED:MY_API_KEY]\n" in stdout
    assert b"[REDACTED:argv]" in stdout
    assert stderr == b"b64 [REDACTED:MY_API_KEY]\nhex [REDACTED:MY_API_KEY]\r"
    # ... and no form of the secrets is, in any file of the staging directory.
    for name, data in logs.items():
        for form in _forms():
            assert form not in data, (name, form)


def test_a_sealed_log_is_scrubbed_once(project: Path) -> None:
    # "ACTED" is inside every marker: scrubbing the log a second time would mangle them.
    (project / "short.py").write_text("import os\nprint(os.environ['SECRET_X'], 'ok')\n")
    r = run_ledger("record", "--", sys.executable, "short.py", cwd=project, SECRET_X="ACTED")
    assert r.returncode == 0, r.stderr
    store = Store.open(project / ".ledger")
    (ref,) = [name for name, _ in store.refs.iter("runs/")]
    _, run = load_run(store, ref.rsplit("/", 1)[-1])
    assert run.stdout is not None
    assert store.objects.get_bytes(run.stdout) == b"[REDACTED:SECRET_X] ok\n"
    assert any("$SECRET_X" in n and "stdout" in n for n in run.notes), run.notes
