"""The chain head: one id that commits to the whole log, and checking that a log extends it.

The head is the BLAKE3 id of the last log line's bytes. Every line names the id of the line
before it, so the head fixes every line up to it, and through their object ids every record
ever referenced. A ledger can be rewritten wholesale and stay self-consistent; a head written
down *outside* the ledger (a paper, a CI log, a signed attestation) is what such a rewrite
cannot match: ``extends`` fails unless that exact line is still in the chain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._hashing import OID_RE
from ..errors import UsageError
from .fold import Fold
from .log import HashLog

__all__ = ["HeadCheck", "chain_head", "extends", "parse_head", "refs_at"]

_BARE_HEX = re.compile(r"^[0-9a-f]{64}$")


def parse_head(text: str) -> str:
    """A full chain head id (``b3:`` + 64 hex digits; the ``b3:`` may be left off)."""
    value = text.strip().lower()
    if _BARE_HEX.match(value):
        value = "b3:" + value
    if not OID_RE.match(value):
        raise UsageError(
            f"{text!r} is not a chain head",
            hint="give the full id `ledger verify` printed (b3: and 64 hex digits); "
            "a prefix is not enough to anchor anything",
        )
    return value


def chain_head(log: HashLog) -> tuple[str | None, int]:
    """(head id, number of committed lines); (None, 0) for an empty log."""
    head: str | None = None
    n = 0
    for entry in log.entries():
        head = entry.hash
        n += 1
    return head, n


@dataclass(frozen=True)
class HeadCheck:
    ok: bool
    seq: int | None  # the line whose hash is the anchored head, when found
    message: str


def extends(log: HashLog, head: str) -> HeadCheck:
    """Whether the log still holds, unbroken from its first line, the line whose id is ``head``."""
    prev: str | None = None
    for lineno, entry in enumerate(log.entries()):
        if entry.data.get("prev") != prev or entry.data.get("seq") != lineno:
            return HeadCheck(
                False,
                None,
                f"the log is broken at line {lineno + 1} before reaching head {head}: "
                "history up to that head was edited, reordered or deleted",
            )
        if entry.hash == head:
            return HeadCheck(True, lineno, f"the log extends head {head} (line {lineno + 1})")
        prev = entry.hash
    return HeadCheck(
        False,
        None,
        f"head {head} is not in the log: the ledger was rolled back or rewritten "
        "since that head was written down",
    )


def refs_at(log: HashLog, head: str) -> dict[str, str] | None:
    """What every ref held right after the line whose id is ``head`` (the fold of the lines up
    to it, refusing what the format does not allow); None if no such line."""
    fold = Fold()
    for entry in log.entries():
        fold.apply(entry.data)
        if entry.hash == head:
            return fold.values()
    return None
