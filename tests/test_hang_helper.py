"""tests/_hang.py: a stopped command that does not end fails with where it hangs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from _hang import HANG_ENV, communicate_or_explain
from _support import subprocess_env

# A parent that ignores the stop and waits on a child that sleeps: the hang a test could meet.
STUCK = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
code = "import time\\ndef wait_forever():\\n    time.sleep(3600)\\nwait_forever()"
child = subprocess.Popen([sys.executable, "-c", code])
print("ready", flush=True)
child.wait()
"""


def test_a_hang_fails_with_the_process_tree_and_every_pythons_stack() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK],
        env=subprocess_env(**HANG_ENV),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    proc.send_signal(2)  # ignored
    with pytest.raises(AssertionError) as e:
        communicate_or_explain(proc, 1, "the stuck command")
    text = str(e.value)
    assert "the stuck command had not ended 1 s after it was stopped" in text
    assert text.count("pid ") >= 2 and "time.sleep(3600)" in text  # parent and child listed
    # faulthandler's dumps, whole and one after the other (not interleaved, as when both
    # were aborted at once): the child's frame by name, then the parent's wait.
    assert text.count("Fatal Python error: Aborted") == 2, text
    child = re.search(r'File "<string>", line 3 in wait_forever\n', text)
    parent = re.search(r'File "[^"]*subprocess\.py", line \d+ in wait\n', text)
    assert child and parent and child.start() < parent.start(), text
    assert proc.returncode is not None


def test_a_command_that_ends_is_waited_for_as_communicate_does() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = communicate_or_explain(proc, 60)
    assert (out, err, proc.returncode) == (b"out\n", b"err\n", 0)
