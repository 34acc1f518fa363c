"""Command lines, paths and values that are not UTF-8.

On Linux an argument, a file name or an environment value is bytes; Python hands the ones
that are not UTF-8 over as ``str`` with lone surrogates (``surrogateescape``: byte ``0xff``
becomes ``U+DCFF``), which canonical JSON cannot hold. Two answers, by what the value is:

- The command line is kept exactly: ``argv`` holds a readable form (each undecodable byte as
  U+FFFD) and ``argv_b64`` the exact bytes of every argument, base64 (RFC 4648, with
  padding). Replay runs the bytes. ``argv_b64`` is absent when every argument is UTF-8.
- Paths (``--input``, ``--output``, ``--config``, the working directory), ``--name``,
  ``--tag`` and recorded environment variables are refused before anything is written
  (``UsageError``, exit 2): records store names as UTF-8.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence

from ..errors import UsageError

__all__ = ["argv_to_run", "is_utf8", "readable", "require_utf8", "split_argv"]


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def readable(text: str) -> str:
    """``text`` with each byte that was not UTF-8 shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def require_utf8(text: str, what: str) -> None:
    """Refuse ``text`` (named ``what`` in the message) if it holds bytes that are not UTF-8."""
    if not is_utf8(text):
        raise UsageError(
            f"{what} {os.fsencode(text)!r} is not valid UTF-8",
            hint="rename it (or set it) in UTF-8: records store names and values as UTF-8",
        )


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """(readable argv, base64 of each argument's exact bytes or None if all are UTF-8)."""
    if all(is_utf8(a) for a in argv):
        return list(argv), None
    exact = [base64.b64encode(os.fsencode(a)).decode("ascii") for a in argv]
    return [readable(a) for a in argv], exact


def argv_to_run(argv: Sequence[str], argv_b64: Sequence[str] | None) -> list[str]:
    """The command line to run again: the exact bytes when they were stored."""
    if argv_b64 is None:
        return list(argv)
    return [os.fsdecode(base64.b64decode(a, validate=True)) for a in argv_b64]
