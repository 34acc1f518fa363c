"""The append-only, hash-chained log of every ref change.

Each line is the canonical JSON of one entry; ``prev`` is the BLAKE3 id of the previous line's
bytes (``null`` for the first). Editing, reordering or deleting any line breaks the chain at
that point, which ``ledger verify`` reports; publishing the head id elsewhere (a paper, a CI
log) makes even a rewrite of the whole chain detectable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._canonical import canonical_json, parse_json
from .._hashing import hash_bytes
from ..errors import IntegrityError
from .safe_read import open_regular

__all__ = ["ChainProblem", "HashLog", "LogEntry"]


@dataclass(frozen=True)
class LogEntry:
    seq: int
    hash: str
    data: dict[str, Any]


@dataclass(frozen=True)
class ChainProblem:
    line: int
    message: str


class HashLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _last_line(self) -> bytes | None:
        """The last complete line, read from the end so appends stay O(1)."""
        try:
            f = open_regular(self.path)
        except FileNotFoundError:
            return None
        with f:
            end = f.seek(0, os.SEEK_END)
            if end == 0:
                return None
            block = 4096
            pos = end
            buf = b""
            while pos > 0:
                step = min(block, pos)
                pos -= step
                f.seek(pos)
                buf = f.read(step) + buf
                lines = buf.split(b"\n")
                # lines[-1] is b"" after a complete final line, or a torn fragment.
                complete = lines[:-1]
                if len(complete) >= 2 or (pos == 0 and complete):
                    return complete[-1]
            return None

    def tail(self, n: int) -> list[LogEntry]:
        """The last ``n`` committed entries (fewer in a shorter log), read from the end; an
        unreadable one stops the list there (``check`` reports it)."""
        try:
            f = open(self.path, "rb")  # noqa: SIM115
        except FileNotFoundError:
            return []
        with f:
            end = f.seek(0, os.SEEK_END)
            pos, buf = end, b""
            while pos > 0 and buf.count(b"\n") <= n:
                step = min(4096, pos)
                pos -= step
                f.seek(pos)
                buf = f.read(step) + buf
        lines = buf.split(b"\n")[:-1]  # the last piece is b"" or a torn fragment
        if pos > 0:
            lines = lines[1:]  # may be the end of a line that starts before ``pos``
        out: list[LogEntry] = []
        for line in reversed(lines[-n:] if n else []):
            try:
                data = parse_json(line)
                seq = int(data["seq"])
            except (ValueError, KeyError, TypeError):
                break
            if not isinstance(data, dict):
                break
            out.append(LogEntry(seq=seq, hash=hash_bytes(line), data=data))
        return out[::-1]

    def _drop_torn_tail(self) -> None:
        """A crash mid-append leaves a line without '\\n': it was never committed; cut it."""
        if not self._has_torn_tail():
            return
        with open_regular(self.path, "r+b") as f:
            content = f.read()
            cut = content.rfind(b"\n") + 1
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())

    def _has_torn_tail(self) -> bool:
        try:
            with open_regular(self.path) as f:
                size = f.seek(0, os.SEEK_END)
                if size == 0:
                    return False
                f.seek(size - 1)
                return f.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def head(self) -> LogEntry | None:
        line = self._last_line()
        if line is None:
            return None
        try:
            data = parse_json(line)
            seq = int(data["seq"])
        except (ValueError, KeyError, TypeError) as e:
            # Chaining onto an unreadable entry would bury the damage under new history.
            raise IntegrityError(
                f"the last entry of the log {self.path} is damaged ({type(e).__name__}); "
                "nothing was appended",
                hint="run `ledger verify` to see where the chain breaks, then restore the log "
                "from a copy",
            ) from None
        return LogEntry(seq=seq, hash=hash_bytes(line), data=data)

    def append(self, **fields: Any) -> LogEntry:
        """Append one entry. The caller holds the store's write lock."""
        return self.append_many([fields])[0]

    def append_many(self, entries: Sequence[dict[str, Any]]) -> list[LogEntry]:
        """Append ``entries`` in order, chained, with one write and one fsync: the commit point
        of them all. A crash midway may commit the first ones and tear the next; a torn line
        was never committed (cut by the next append). The caller holds the store's write lock."""
        self._drop_torn_tail()
        head = self.head()
        out: list[LogEntry] = []
        lines: list[bytes] = []
        for fields in entries:
            entry = dict(fields)
            entry["seq"] = 0 if head is None else head.seq + 1
            entry["prev"] = None if head is None else head.hash
            line = canonical_json(entry)
            head = LogEntry(seq=entry["seq"], hash=hash_bytes(line), data=entry)
            out.append(head)
            lines.append(line + b"\n")
        try:
            f = open_regular(self.path, "ab")
        except FileNotFoundError:
            f = open(self.path, "xb")  # noqa: SIM115 - the first line (O_EXCL: no link followed)
        with f:
            f.write(b"".join(lines))
            f.flush()
            os.fsync(f.fileno())
        return out

    def entries(self) -> Iterator[LogEntry]:
        """Every committed entry, unchecked; see ``check`` for the chain."""
        for _, entry in self.entries_from(0):
            yield entry

    def entries_from(self, at: int) -> Iterator[tuple[int, LogEntry]]:
        """(offset, entry) of each committed line starting at byte offset ``at`` (the start of a
        line), unchecked: how ``ledger.index`` reads only the lines it has not folded yet."""
        try:
            f = open_regular(self.path)
        except FileNotFoundError:
            return
        with f:
            f.seek(at)
            pos = at
            for raw in f:
                if not raw.endswith(b"\n"):
                    return
                start, pos = pos, pos + len(raw)
                line = raw[:-1]
                try:
                    data = parse_json(line)
                except ValueError:
                    data = None
                if not isinstance(data, dict):  # damaged: ``check`` reports it, nothing crashes
                    data = {"seq": -1, "unparseable": True}
                seq = data.get("seq")
                if not isinstance(seq, int) or isinstance(seq, bool):
                    seq = -1
                yield start, LogEntry(seq=seq, hash=hash_bytes(line), data=data)

    def check(self) -> tuple[list[ChainProblem], LogEntry | None]:
        problems: list[ChainProblem] = []
        prev: LogEntry | None = None
        for lineno, entry in enumerate(self.entries(), start=1):
            if entry.data.get("unparseable"):
                problems.append(ChainProblem(lineno, "log line is not valid JSON (an object)"))
            elif entry.seq != lineno - 1:  # entry.seq is -1 unless seq is a true integer
                problems.append(
                    ChainProblem(
                        lineno, f"log seq is {entry.data.get('seq')}, expected {lineno - 1}"
                    )
                )
            expected_prev = None if prev is None else prev.hash
            if entry.data.get("prev") != expected_prev:
                problems.append(
                    ChainProblem(
                        lineno,
                        "log chain broken: entry does not point at the hash of the line before it "
                        "(history was edited, reordered or deleted)",
                    )
                )
            prev = entry
        if self._has_torn_tail():
            problems.append(
                ChainProblem(-1, "log ends with an incomplete entry (crash during append)")
            )
        return problems, prev
