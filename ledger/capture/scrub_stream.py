"""Known secret values scrubbed from a stream before any of it is written to disk.

``ledger record`` writes the child's stdout and stderr into the run's staging directory while
the child runs. Scrubbing only when the run is sealed would leave the secrets given at launch
in clear on disk meanwhile, and for good if the recorder is killed. A :class:`ScrubStream`
sits between the pipe and the log file instead: each chunk goes through the same pattern as
:meth:`Scrubber.scrub`, and what could be the start of a value split across two reads is held
back until the next chunk: the bytes after the last line end (no form of a value holds one),
at most the longest form plus one. Complete lines therefore reach the log at once; a recorder
killed mid-line loses at most that tail. Each byte is scanned once, plus the held tail once
more per chunk: linear in the size of the stream.

The result is what :meth:`Scrubber.scrub` gives on the whole stream (the tests check it for
every split), except that the stream cannot wait for 8 KiB to tell binary from text: it
scrubs as text until a NUL turns up in the first 8 KiB, as binary from there on.

Content detection (lines that look like credentials) still runs over the whole log at seal
(``scrub_run_dir``): it needs whole lines, and only values known at launch are urgent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .form_match import FormMatcher

__all__ = ["ScrubStream"]

_SNIFF = 8192  # as Scrubber.scrub: a NUL in the first 8 KiB makes the data binary
_LINE_ENDS = re.compile(rb"[\r\n]")


class Scrubber(Protocol):
    """What a stream needs of ``ledger.capture.secrets.Scrubber`` (which builds the streams)."""

    @property
    def longest_form(self) -> int: ...
    @property
    def forms(self) -> list[bytes]: ...
    def matcher_for(self, head: bytes) -> FormMatcher | None: ...
    def replacement(self, form: bytes, where: str) -> bytes: ...


class ScrubStream:
    """``feed`` chunks in order, then ``flush`` once; write what each returns."""

    def __init__(self, scrubber: Scrubber, where: str) -> None:
        self._scrubber = scrubber
        self._where = where
        self._matcher = scrubber.matcher_for(b"")
        self._hold = scrubber.longest_form + 1  # +1: a short form's look-ahead
        # A match cannot cross a line end unless a value holds one (a PEM key in a variable).
        self._lines = not any(_LINE_ENDS.search(f) for f in scrubber.forms)
        self._seen = 0
        # Bytes not written yet, after ``_ctx`` bytes (0 or 1) already written: the byte before
        # them, which a short form's look-behind needs to see.
        self._pending = b""
        self._ctx = 0

    def feed(self, chunk: bytes) -> bytes:
        if self._seen < _SNIFF and b"\0" in chunk[: _SNIFF - self._seen]:
            self._matcher = self._scrubber.matcher_for(b"\0")
        self._seen += len(chunk)
        if self._matcher is None:  # nothing (left) to look for: pass through
            out, self._pending, self._ctx = self.held() + chunk, b"", 0
            return out
        buf = self._pending + chunk
        safe = len(buf) - self._hold
        if self._lines:
            end = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
            safe = max(safe, end + 1)
        return self._scan(buf, safe)

    def flush(self) -> bytes:
        if self._matcher is None:
            out, self._pending, self._ctx = self.held(), b"", 0
            return out
        return self._scan(self._pending, len(self._pending))

    def held(self) -> bytes:
        """What is held back now, not scrubbed yet."""
        return self._pending[self._ctx :]

    def _scan(self, buf: bytes, safe: int) -> bytes:
        """Scrub ``buf`` up to ``safe``: a match starting before it is decided, because every
        form that could start there fits in ``buf``; keep the rest pending."""
        if self._matcher is None:
            raise TypeError("the scrubber scanned without a matcher")
        start = self._ctx
        out: list[bytes] = []
        pos = start
        for m_start, m_end in self._matcher.finditer(buf, start):
            if m_start >= safe:
                break
            out.append(buf[pos:m_start])
            out.append(self._scrubber.replacement(buf[m_start:m_end], self._where))
            pos = m_end
        cut = max(pos, safe, start)
        out.append(buf[pos:cut])
        self._ctx = 1 if cut > 0 else 0
        self._pending = buf[cut - self._ctx :]
        return b"".join(out)
