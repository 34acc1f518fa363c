"""Lines the secret detectors found clean, remembered between runs of one ledger.

At launch every environment variable (and argument) that could hold a token goes through the
content detectors; importing them costs 0.2-0.4 s, most of a ``ledger record``'s start-up. The
environment rarely changes between runs, so the lines found clean are remembered in
``.ledger/cache/secrets-clean.v1``, as 16-byte keyed BLAKE3 hashes (the key is random and
stored in the same file: the memo names no value, though a guess can be checked against it;
only lines judged *not* to be secrets are ever in it). A line that holds a secret is never
remembered, so it is found again on every run. The memo is dropped whenever the detection
rules can have changed: another ledger version, another detect-secrets version, or an edit of
the rules' source files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import blake3

from ..store.atomic import atomic_write_bytes
from ..store.safe_read import NotRegularError, read_regular

__all__ = ["MEMO_NAME", "CleanMemo"]

MEMO_NAME = "secrets-clean.v1"
MAX_LINES = 8192  # the oldest are dropped beyond this (an environment has a few hundred)
# The memo file at most: MAX_LINES hashes of 32 hex digits in JSON, and room to spare.
MAX_MEMO = 1 << 20
_RULES = ("secrets.py", "redact.py")


def _detector_version() -> str:
    """The installed detect-secrets version, as ``importlib.metadata.version`` gives it: read
    from the first ``detect_secrets-VERSION.dist-info`` on ``sys.path`` (importing
    importlib.metadata costs every ``ledger record`` about 20 ms); other layouts (egg-info, an
    unusual name) fall back to it."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            if name.endswith(".dist-info"):
                dist, sep, found = name[: -len(".dist-info")].partition("-")
                if sep and "-" not in found and dist.lower() == "detect_secrets":
                    return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("detect-secrets")
    except PackageNotFoundError:
        return "none"


def _tag() -> str:
    """What the detection results depend on."""
    from .._version import __version__

    detector = _detector_version()
    h = blake3.blake3(f"{__version__}\0{detector}\0".encode())
    here = Path(__file__).parent
    for name in _RULES:
        h.update((here / name).read_bytes())
    return h.hexdigest()[:32]


class CleanMemo:
    def __init__(self, path: Path | None, key: bytes, lines: list[str], tag: str) -> None:
        self.path = path
        self.key = key
        self.tag = tag
        self._lines = dict.fromkeys(lines)  # insertion order: oldest first
        self._dirty = False

    @classmethod
    def load(cls, path: Path | None) -> CleanMemo:
        tag = _tag()
        if path is not None:
            try:
                data = json.loads(read_regular(path, MAX_MEMO))
                if data["tag"] == tag:
                    return cls(path, bytes.fromhex(data["key"]), list(data["clean"]), tag)
            except (OSError, ValueError, KeyError, TypeError, NotRegularError):
                pass  # absent, damaged or stale: start afresh
        return cls(path, os.urandom(32), [], tag)

    @classmethod
    def for_store(cls, root: Path) -> CleanMemo:
        """The memo of the ledger at ``root``."""
        return cls.load(root / "cache" / MEMO_NAME)

    def _digest(self, line: str) -> str:
        return blake3.blake3(line.encode("utf-8", "surrogateescape"), key=self.key).hexdigest(16)

    def __contains__(self, line: object) -> bool:
        return isinstance(line, str) and self._digest(line) in self._lines

    def add(self, line: str) -> None:
        d = self._digest(line)
        if d not in self._lines:
            self._lines[d] = None
            self._dirty = True

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        lines = list(self._lines)[-MAX_LINES:]
        data = {"tag": self.tag, "key": self.key.hex(), "clean": lines}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, json.dumps(data).encode())
        except OSError:
            return  # a read-only ledger: detection simply runs again next time
        self._dirty = False
