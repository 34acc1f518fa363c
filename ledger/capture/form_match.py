"""Find known byte strings (a secret's value and its encoded forms) in time linear in the data.

Python's ``re`` tries each alternative at each position: with a few secrets of a few forms
each, scrubbing ran at 8-60 MB/s, slow enough to block a chatty command on a full pipe now
that the logs are scrubbed while the command runs (``scrub_stream``). RE2 runs the whole
alternation as one automaton (150+ MB/s). Semantics are those of the ``re`` pattern the
scrubber used before: at the leftmost position where something matches, the longest form
wins; a short form (under ``standalone_below`` bytes) counts only where no letter or digit
touches it on either side, a check RE2 cannot express (no lookaround), made here in Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["FormMatcher"]

_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _literal(form: bytes) -> str:
    return "".join(chr(b) if chr(b).isalnum() and b < 128 else f"\\x{{{b:02x}}}" for b in form)


def _compile(alternatives: Sequence[bytes]) -> Any:
    """RE2 over raw bytes (Latin-1: one byte, one character); Python's ``re`` if RE2 is
    missing or refuses (a pattern over its memory budget)."""
    try:
        import re2

        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.max_mem = 256 << 20
        options.log_errors = False
        pattern = "|".join(_literal(f) for f in alternatives)
        return re2.compile(pattern.encode("latin-1"), options)
    except Exception:
        return re.compile(b"|".join(re.escape(f) for f in alternatives))


class FormMatcher:
    """``finditer(data, pos)`` yields the (start, end) of each match, left to right."""

    def __init__(self, long: Sequence[bytes], short: Sequence[bytes] = ()) -> None:
        self._long = sorted(set(long), key=len, reverse=True)
        self._short = list(dict.fromkeys(short))
        self._pattern = _compile(self._long + self._short)
        self._short_set = set(self._short)

    def finditer(self, data: bytes, pos: int = 0) -> Iterator[tuple[int, int]]:
        n = len(data)
        while pos <= n:
            m = self._pattern.search(data, pos)
            if m is None:
                return
            start, end = m.start(), m.end()
            if m.group() in self._short_set and not self._standalone(data, start, end):
                end = self._other_short(data, start)
                if end < 0:
                    pos = start + 1
                    continue
            yield start, end
            pos = end if end > start else end + 1

    def sub(self, data: bytes, repl: Any) -> bytes:
        """``data`` with each match replaced by ``repl(data[start:end])``."""
        out: list[bytes] = []
        last = 0
        for start, end in self.finditer(data):
            out.append(data[last:start])
            out.append(repl(data[start:end]))
            last = end
        if not out:
            return data
        out.append(data[last:])
        return b"".join(out)

    @staticmethod
    def _standalone(data: bytes, start: int, end: int) -> bool:
        return (start == 0 or data[start - 1] not in _ALNUM) and (
            end >= len(data) or data[end] not in _ALNUM
        )

    def _other_short(self, data: bytes, start: int) -> int:
        """The end of the first short form that stands alone at ``start`` (``re`` tries them
        all, in order, before it moves on), or -1."""
        for form in self._short:
            end = start + len(form)
            if data.startswith(form, start) and self._standalone(data, start, end):
                return end
        return -1
