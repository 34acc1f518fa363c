"""Run ``ledger`` on a real pseudo-terminal of a given size, as a person at a terminal does."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from _support import subprocess_env

# CSI and OSC sequences rich writes for colour and style on a terminal.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_pty(
    *args: str, cwd: Path, columns: int = 80, rows: int = 24, **env: str
) -> tuple[int, list[str]]:
    """(exit status, the lines shown, styles removed) of ``ledger ARGS`` whose stdin, stdout
    and stderr are a terminal ``columns`` wide. ``COLUMNS`` and ``LINES`` are not set: the
    width comes from the terminal, as in an interactive shell that does not export them."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    child_env = subprocess_env(TERM="xterm-256color", **env)
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"):
        if name not in env:
            child_env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=child_env,
        start_new_session=True,
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError as e:  # EIO: every writer of the terminal has closed it
                if e.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    code = proc.wait(timeout=120)
    text = _ESCAPES.sub("", b"".join(chunks).decode("utf-8", errors="replace"))
    # A progress display redraws its line after carriage returns: a line shows its last draw.
    return code, [line.split("\r")[-1] for line in text.replace("\r\n", "\n").split("\n")]
