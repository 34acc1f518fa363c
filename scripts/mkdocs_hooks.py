"""Hooks of the docs build (mkdocs.yml ``hooks:``).

mkdocstrings' autorefs extension reads ``[text][id]`` anywhere in a page's Markdown as a
cross-reference to an API object, so Python written as prose (``tensors[jobs[n][0]][0]`` in the
mutation report, which a script writes) fails the strict build as an unknown target ``0``. The
docs make cross-references with mkdocstrings' ``::: name`` blocks only, so outside code (fenced
blocks and backtick spans) ``][`` is escaped to ``]\\[``, which Markdown shows unchanged.
"""

from __future__ import annotations

import re
from typing import Any

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:.*?[^`])?\1")


def _escape_refs(text: str) -> str:
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(text[pos : m.start()].replace("][", "]\\["))
        out.append(m.group())
        pos = m.end()
    out.append(text[pos:].replace("][", "]\\["))
    return "".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced or "][" not in line else _escape_refs(line))
    return "\n".join(lines)
