"""Output to a reader that may leave (``ledger ls | head -1``): stop quietly, exit 141."""

from __future__ import annotations

import sys
from typing import NoReturn

__all__ = ["flush_stdout", "quiet_broken_pipe"]


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_broken_pipe()


def quiet_broken_pipe() -> NoReturn:
    """`ledger ls | head -1`: the reader left; stop quietly like other Unix tools."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)
