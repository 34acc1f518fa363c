"""The guard in conftest.py: whatever a test leaves running is killed when it ends, and a test
that passed yet left a process behind fails. Checked on an inner pytest run of small tests
under a copy of this suite's conftest.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _support import inner_suite, subprocess_env

INNER = '''
import os, subprocess, sys, textwrap
import pytest
from pathlib import Path

PIDS = Path(os.environ["PIDS"])
SHARED = []
KEEP = []  # held, so that no Popen is collected (and warns) while its process runs


def _note(pid):
    with PIDS.open("a") as f:
        f.write(f"{pid}\\n")


# Sleepers sleep an hour: each one gone at the end was stopped, however slow the machine.
def _sleeper(**kw):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], **kw)
    KEEP.append(proc)
    _note(proc.pid)
    return proc


def test_leaves_a_child():
    _sleeper()


def test_leaves_a_child_in_its_own_session():
    _sleeper(start_new_session=True)


def test_leaves_an_orphan():
    # The middle process starts a sleeper in a session of its own and exits at once: the
    # sleeper is no longer a descendant of the test process.
    code = textwrap.dedent("""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                             start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        print(p.pid, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    _note(int(out.stdout))


def test_fails_and_leaves_a_child():
    _sleeper()
    assert False, "the test's own failure"


def test_stops_its_child():
    proc = _sleeper()
    proc.kill()
    proc.wait()


@pytest.fixture(scope="session")
def server():
    # A process shared by the session: the test that first asks for it does not own it.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    yield proc
    proc.kill()
    proc.wait()


def test_asks_for_a_shared_process_on_the_fly(request):
    SHARED.append(request.getfixturevalue("server"))


def test_the_shared_process_outlives_the_test_that_started_it():
    assert SHARED[0].poll() is None


@pytest.fixture
def ends_after_the_test():
    # cat runs until its input closes: when this fixture ends, after the test, before the
    # guard looks (the autouse guard is set up first, so torn down last).
    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    KEEP.append(proc)
    yield
    proc.stdin.close()


def test_a_child_that_ends_in_the_grace_period(ends_after_the_test):
    assert KEEP[-1].poll() is None
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_guard_stops_what_a_test_left_running(tmp_path: Path) -> None:
    inner_suite(tmp_path, INNER)
    pids = tmp_path / "pids"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "-W", "error",
         "tests/test_inner.py"],
        cwd=tmp_path,
        env=subprocess_env(PIDS=str(pids)),
        capture_output=True,
        text=True,
        timeout=900,  # a deadline for a hung run, not a speed goal
    )  # fmt: skip
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    # Each leaking test that passed is failed by the guard (an error at teardown), naming what
    # it killed; the test that failed on its own is reported once, for its own failure.
    for name in ("test_leaves_a_child", "test_leaves_a_child_in_its_own_session",
                 "test_leaves_an_orphan"):  # fmt: skip
        assert f"ERROR at teardown of {name} " in out, out
    assert out.count("ERROR at teardown of") == 3, out
    assert "FAILED tests/test_inner.py::test_fails_and_leaves_a_child" in out, out
    assert "PASSED tests/test_inner.py::test_stops_its_child" in out, out
    assert "PASSED tests/test_inner.py::test_a_child_that_ends_in_the_grace_period" in out, out
    for name in ("test_asks_for_a_shared_process_on_the_fly",
                 "test_the_shared_process_outlives_the_test_that_started_it"):  # fmt: skip
        assert f"PASSED tests/test_inner.py::{name}" in out, out
    assert "3 errors" in out and "1 failed" in out, out
    # Nothing the inner tests started outlives them: each sleeper (an hour) is gone.
    noted = [int(line) for line in pids.read_text().split()]
    assert len(noted) == 5
    for pid in noted[:3]:  # each killed process is named
        assert f"pid {pid}: " in out, out
    assert [pid for pid in noted if _alive(pid)] == []
