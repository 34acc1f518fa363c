"""A signal that lands after the command ended, while ``ledger record`` writes the run's record,
is held until the record is sealed, then obeyed (ledger/run/execute.py, ``held_signals``): a
second Ctrl-C or a scheduler's SIGTERM there used to kill the recorder mid-seal, leaving the
run unsealed (its staging dir abandoned, its output never stored). Sent twice, it ends the
process at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _hang import HANG_ENV, communicate_or_explain
from _support import init_ledger, run_ledger, subprocess_env

from ledger.run.execute import ExecResult, stopped_by

HELD = """
import os, signal, sys, time
from ledger.run.execute import held_signals
with held_signals("the test's work") as held:
    for _ in range(int(sys.argv[1])):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)  # the handler runs
    print("held", held, flush=True)
print("not reached", flush=True)  # the SIGTERM held is obeyed as the block ends
"""


def _held(times: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HELD, str(times)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_one_signal_is_held_and_said_then_obeyed_when_the_work_is_done() -> None:
    r = _held(1)
    assert r.stdout == "held [15]\n", r.stderr
    assert r.returncode == -signal.SIGTERM
    assert "ledger: SIGTERM while the test's work; finishing that first, then stopping" in r.stderr
    assert "send it again to stop at once" in r.stderr


def test_a_signal_ignored_before_stays_ignored() -> None:
    # nohup and `cmd &` start a process with signals ignored: nothing to hold or say.
    code = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + HELD
    r = subprocess.run(
        [sys.executable, "-c", code, "1"], env=subprocess_env(), capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout == "held []\nnot reached\n" and not r.stderr


def test_a_second_signal_ends_the_process_at_once() -> None:
    r = _held(2)
    assert r.returncode == -signal.SIGTERM
    assert "held" not in r.stdout and r.stderr.count("finishing that first") == 1


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


# Writes an output the seal must store (hashing and copying it takes a while), says its pid,
# and exits 0.
WRITER = """
import os
os.makedirs("out", exist_ok=True)
with open("out/big.bin", "wb") as f:
    for i in range(96):
        f.write(os.urandom(1 << 20))
print("pid", os.getpid(), flush=True)
"""


def _objects(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root / ".ledger" / "objects"))


def _record(project: Path, code: str) -> tuple[subprocess.Popen[bytes], int]:
    """``ledger record -o out -- python -c CODE``, started; (the recorder, the command's pid
    once CODE has printed it)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", "record", "--json", "-o", "out", "--",
         sys.executable, "-c", code],
        cwd=project,
        env=subprocess_env(**HANG_ENV),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line[0] == b"pid", line
    return proc, int(line[1])


def _wait_for_the_seal(
    proc: subprocess.Popen[bytes], project: Path, before: int, deadline: float
) -> None:
    """Until the seal of the run has written an object (the store holds more than ``before``).
    A recorder that ends first fails the test with its stderr; one still without a seal at
    ``deadline`` with what it runs and every thread's stack (``communicate_or_explain``): a CI
    run of 7 December waited the whole 120 s here after SIGINT reached the command, and said
    only that the seal was not seen."""
    while _objects(project) == before:
        if proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
            continue
        # Ended, or still running at the deadline (then this fails with its stacks).
        _, err = communicate_or_explain(proc, 0.1, "ledger record, with no object of its seal yet,")
        if _objects(project) != before:
            return  # it sealed and ended between the two looks
        raise AssertionError(
            f"ledger record ended ({proc.returncode}) before its seal was seen:\n"
            + err.decode("utf-8", "replace")[-5000:]
        )


def test_sigterm_while_the_record_is_sealed_does_not_lose_the_run(project: Path) -> None:
    proc, child = _record(project, WRITER)
    deadline = time.monotonic() + 120
    while os.path.exists(f"/proc/{child}"):  # until the recorder has reaped the command
        assert time.monotonic() < deadline and proc.poll() is None, "the command did not end"
        time.sleep(0.005)
    _wait_for_the_seal(proc, project, _objects(project), deadline)
    proc.send_signal(signal.SIGTERM)
    _, err = communicate_or_explain(proc, 120, "ledger record after SIGTERM while sealing")
    text = err.decode()
    assert proc.returncode == -signal.SIGTERM, text  # obeyed once the run was sealed
    rows = json.loads(run_ledger("ls", "--json", cwd=project).stdout)
    assert [r["status"] for r in rows] == ["succeeded"], rows  # the command ended by itself
    assert not list((project / ".ledger" / "staging").glob("*")), "a staging dir was left"
    assert "SIGTERM while the run's record is written; finishing that first" in text
    assert run_ledger("verify", cwd=project).returncode == 0


# The command is killed from outside (by the test, as `scancel` or `kill -TERM -- -PGID` reach
# it first), then the recorder gets a stop signal of its own while it seals the run, or none.
KILLED = """
import os, time
os.makedirs("out", exist_ok=True)
with open("out/big.bin", "wb") as f:
    for i in range(96):
        f.write(os.urandom(1 << 20))
print("pid", os.getpid(), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize(
    ("to_command", "to_recorder", "status", "by"),
    [
        pytest.param(signal.SIGTERM, signal.SIGTERM, "interrupted", signal.SIGTERM, id="job"),
        pytest.param(signal.SIGINT, signal.SIGHUP, "interrupted", signal.SIGHUP, id="int-hup"),
        pytest.param(signal.SIGTERM, None, "killed", None, id="command-alone"),
        pytest.param(signal.SIGKILL, signal.SIGTERM, "killed", None, id="oom-kill"),
    ],
)
def test_a_stop_signal_reaching_the_command_first_still_seals_the_run_interrupted(
    project: Path,
    to_command: signal.Signals,
    to_recorder: signal.Signals | None,
    status: str,
    by: signal.Signals | None,
) -> None:
    proc, child = _record(project, KILLED)
    before = _objects(project)
    os.kill(child, to_command)
    deadline = time.monotonic() + 120
    if to_recorder is not None:
        _wait_for_the_seal(proc, project, before, deadline)  # so the command is gone
        proc.send_signal(to_recorder)
    _, err = communicate_or_explain(proc, 120, "ledger record of a command killed from outside")
    text = err.decode()
    rows = json.loads(run_ledger("ls", "--json", cwd=project).stdout)
    assert [r["status"] for r in rows] == [status], (rows, text)
    run = json.loads(run_ledger("show", rows[0]["run_id"], "--json", cwd=project).stdout)["run"]
    assert run["interrupted_by"] == by and run["signal"] == to_command, run
    # Obeyed once sealed (the recorder dies of it); else 128 + the command's signal.
    want = -to_recorder if to_recorder is not None else 128 + to_command
    assert proc.returncode == want, text
    assert not list((project / ".ledger" / "staging").glob("*")), "a staging dir was left"


def _result(returncode: int, forwarded: int | None = None) -> ExecResult:
    return ExecResult(
        returncode=returncode,
        signal=-returncode if returncode < 0 else None,
        interrupted_by=forwarded,
        wall_seconds=1.0,
        cpu_user_seconds=0.0,
        cpu_system_seconds=0.0,
        peak_rss_bytes=0,
        started_monotonic=0.0,
    )


@pytest.mark.parametrize(
    ("returncode", "forwarded", "held", "by"),
    [
        (-15, None, [15], 15),  # died of SIGTERM; the recorder's came during the seal
        (-2, None, [1, 15], 1),  # the first one held is the one obeyed
        (143, None, [15], 15),  # a shell wrapper exits 128 + the signal its child died of
        (130, None, [2], 2),
        (-3, None, [2], 2),  # SIGQUIT is a stop signal too
        (-15, None, [], None),  # nothing reached the recorder: killed from outside
        (-9, None, [15], None),  # SIGKILL is no stop request: killed (the OOM killer)
        (137, None, [15], None),
        (0, None, [15], None),  # ended by itself, then the signal: succeeded
        (1, None, [15], None),  # failed by itself
        (129 + 64, None, [15], None),  # not 128 + a stop signal
        (1, 2, [], 2),  # forwarded while it ran: that one, whatever the exit
        (-15, 2, [15], 2),
    ],
)
def test_which_signal_a_run_is_interrupted_by(
    returncode: int, forwarded: int | None, held: list[int], by: int | None
) -> None:
    assert stopped_by(_result(returncode, forwarded), held) == by
