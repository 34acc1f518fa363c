"""``--metric`` patterns compiled with RE2, so matching a line takes time linear in its length.

Python's ``re`` backtracks: ``(?P<loss>(a+)+)b`` on a line of 30 ``a`` takes minutes, and the
recorder matches on the thread that drains the command's output pipe, so the command would
stall on a full pipe. RE2 never backtracks; what it cannot do in linear time (backreferences,
lookaround, possessive quantifiers) it refuses to compile, and so does ``compile_metric``.

The pattern language is RE2's (https://github.com/google/re2/wiki/Syntax), with one rewrite so
that patterns written for Python keep their meaning: RE2's ``\\d``, ``\\w`` and ``\\s`` are
ASCII, Python's are Unicode. ``\\d \\D \\w \\W \\s \\S`` outside brackets, and ``\\d \\D \\w \\s``
inside them, are rewritten to the Unicode classes Python uses; ``\\Z`` becomes RE2's ``\\z``
and ``\\uXXXX``/``\\UXXXXXXXX`` become ``\\x{...}``. ``\\b``, and ``\\W \\S`` inside brackets,
keep RE2's ASCII meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from .rawbytes import require_utf8

__all__ = ["MetricPattern", "compile_metric", "to_re2"]

# Python's Unicode \s (the characters ``str.isspace`` accepts), as a class body.
_SPACE = (
    r"\t-\r\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}"
    r"\x{3000}"
)
_WORD = r"\p{L}\p{N}_"
_OUTSIDE = {
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "Z": r"\z",
}
_INSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}
_HEX = {"u": 4, "U": 8}
_HINT = (
    "--metric patterns use RE2 syntax, which matches in linear time: no backreferences, "
    "lookahead/lookbehind, possessive quantifiers or (?x) verbose mode"
)


def _is_hex(text: str) -> bool:
    return all(h in "0123456789abcdefABCDEF" for h in text)


def to_re2(pattern: str) -> str:
    """``pattern`` with Python's Unicode class escapes rewritten for RE2 (module doc)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = 0  # index in pattern just after "[" or "[^": a "]" there is a literal
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            digits = _HEX.get(e, 0)
            hex_text = pattern[i + 2 : i + 2 + digits]
            table = _INSIDE if in_class else _OUTSIDE
            if e in table:
                out.append(table[e])
            elif digits and len(hex_text) == digits and _is_hex(hex_text):
                out.append(f"\\x{{{hex_text}}}")
                i += digits
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                if end != -1:  # a POSIX class such as [:alpha:]
                    out.append(pattern[i : end + 2])
                    i = end + 2
                    continue
            if c == "]" and i != class_start:
                in_class = False
        elif c == "[":
            in_class = True
            class_start = i + 1
            if pattern.startswith("^", i + 1):
                out.append("[^")
                i += 2
                class_start = i
                continue
        out.append(c)
        i += 1
    return "".join(out)


class MetricPattern:
    """A compiled ``--metric`` pattern, matched over UTF-8 bytes.

    It calls RE2's ``Match`` directly (one C call per match, spans back): the ``re``-like
    wrapper of google-re2 costs several times more per line than the match itself, and the
    matching runs on the thread that drains the command's output.
    """

    def __init__(self, text: str, regexp: Any) -> None:
        self.text = text
        self._re = regexp
        self._anchor = regexp.Anchor.UNANCHORED
        named = regexp.NamedCapturingGroups()
        items = named.items() if isinstance(named, dict) else named
        self.groupindex: dict[str, int] = {
            (k.decode() if isinstance(k, bytes) else k): int(v) for k, v in items
        }
        self._named = sorted(self.groupindex.items(), key=lambda kv: kv[1])

    def finditer(self, data: bytes) -> Iterator[dict[str, str | None]]:
        """The named groups of each non-overlapping match in ``data`` (valid UTF-8)."""
        pos, end = 0, len(data)
        while pos <= end:
            spans = self._re.Match(self._anchor, data, pos, end)
            start, stop = spans[0]
            if start < 0:
                return
            yield {
                name: None if spans[i][0] < 0 else data[spans[i][0] : spans[i][1]].decode()
                for name, i in self._named
            }
            if stop > start:
                pos = stop
            elif stop >= end:
                return
            else:  # an empty match: go on from the next character
                lead = data[stop]
                pos = stop + (1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4)


def compile_metric(text: str) -> MetricPattern:
    """``text`` compiled with RE2; ``UsageError`` (exit 2) for a pattern RE2 cannot compile
    (saying whether Python's ``re`` could) or that is not UTF-8."""
    import re2  # google-re2
    from re2 import _re2

    require_utf8(text, "--metric")
    encoded = to_re2(text).encode("utf-8")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr
    regexp = _re2.RE2(encoded, options)
    if regexp.ok():
        return MetricPattern(text, regexp)
    raw = regexp.error()
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        re.compile(text)
    except re.error as e:
        raise UsageError(
            f"--metric {text!r} is not a valid regular expression: {e}",
            hint=r"e.g. 'step (?P<step>\d+) loss (?P<loss>\S+)'",
        ) from None
    raise UsageError(f"--metric {text!r} is refused: RE2 cannot compile it ({reason})", hint=_HINT)
