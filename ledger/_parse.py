"""Parsing text that comes from outside: YAML, JSON and TOML, with caps on what it may cost.

A config file, a claims file, a check spec, an MLflow ``meta.yaml``, a package manifest, an
attestation or a remote's metadata is written by someone else. 370 bytes of YAML whose aliases
repeat aliases expand to hundreds of millions of nodes (a "billion laughs": 113 s and 2.5 GB in
``ledger record --config`` before this module); text nested some thousands of levels deep ends
a recursive parser in ``RecursionError``, and libyaml's C composer in a segmentation fault.
Every such parse goes through here:

- YAML: libyaml's event parser (PyYAML's own when libyaml is absent), composed here without
  recursion, refusing collections nested deeper than ``max_depth``, documents of more than
  ``max_nodes`` nodes counting each alias as the nodes it repeats, and an alias inside its own
  anchor; then PyYAML's safe constructor (plain data: no Python objects).
- JSON and TOML: the standard parsers, refusing values nested deeper than ``max_depth``.
- ``read_bounded``: at most a given number of bytes of a file, so ``/dev/zero`` or a huge file
  named by mistake is refused instead of read into memory.

Errors are ``ParseError`` (a ``ValueError``; ``LimitError`` for a cap) with the line and column
where known; callers say which file. This module imports nothing else of ledger (the bottom
layer, docs/explanation/design.md), and yaml only when YAML is parsed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_RECORD_DEPTH",
    "LimitError",
    "ParseError",
    "exceeds_depth",
    "load_json",
    "load_toml",
    "load_yaml",
    "load_yaml_documents",
    "load_yaml_node",
    "read_bounded",
]

# What a person writes nests a few levels (a Hydra config, a claim, a spec); 100 is far past it
# and far below the interpreter's recursion limit (1,000), which every walk over the value
# afterwards (redaction, canonical JSON, validation) would otherwise meet.
MAX_DEPTH = 100
# Records and manifests hold such values a few levels down (a config record's files, values).
MAX_RECORD_DEPTH = 2 * MAX_DEPTH
# Nodes of one YAML document, each alias counted as the nodes it repeats.
MAX_NODES = 1_000_000


class ParseError(ValueError):
    """Text that cannot be read, or that exceeds a cap; ``line`` and ``column`` count from 1."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        at = (
            f"line {self.line}" if self.column is None else f"line {self.line} column {self.column}"
        )
        return f"{self.message} ({at})"

    @property
    def where(self) -> str:
        """``:LINE:COLUMN`` (or ``:LINE``) to append to a file name; empty when unknown."""
        if self.line is None:
            return ""
        return f":{self.line}" if self.column is None else f":{self.line}:{self.column}"


class LimitError(ParseError):
    """Well-formed text, refused for what it would cost: too deep, too many nodes, too large."""


def _too_deep(max_depth: int) -> str:
    return f"nested more than {max_depth} levels deep"


def exceeds_depth(value: Any, max_depth: int) -> bool:
    """Whether lists and dicts in ``value`` nest deeper than ``max_depth`` (``[]`` is 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list | tuple))
    return False


# --- JSON and TOML ------------------------------------------------------------------------------


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON constant {token}")


_DECODER = json.JSONDecoder()
_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def load_json(text: str, *, max_depth: int = MAX_DEPTH, strict: bool = False) -> Any:
    """Parse JSON text; ``strict`` refuses NaN and Infinity (canonical JSON never has them)."""
    try:
        value = (_STRICT_DECODER if strict else _DECODER).decode(text)
    except json.JSONDecodeError as e:
        raise ParseError(e.msg, e.lineno, e.colno) from None
    except RecursionError:
        raise LimitError(_too_deep(max_depth)) from None
    # Cheap first: a document with fewer brackets than the cap cannot nest past it (the log's
    # lines, most records).
    if text.count("[") + text.count("{") > max_depth and exceeds_depth(value, max_depth):
        raise LimitError(_too_deep(max_depth))
    return value


_TOML_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)")


def load_toml(text: str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """Parse TOML text (tomllib, imported only here: it costs every ``ledger record`` ~3 ms)."""
    import tomllib

    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_AT.search(str(e))
        line, column = (int(m.group(1)), int(m.group(2))) if m and m.group(1) else (None, None)
        raise ParseError(_TOML_AT.sub("", str(e)), line, column) from None
    except RecursionError:
        raise LimitError(_too_deep(max_depth)) from None
    if exceeds_depth(value, max_depth):
        raise LimitError(_too_deep(max_depth))
    return value


# --- YAML ---------------------------------------------------------------------------------------


def _yaml_loader(text: str) -> Any:
    import yaml

    # libyaml's parser is a loop over an explicit stack (so is PyYAML's); its composer recurses
    # in C, which is why composing is done here.
    cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return cls(text)


def _marked(e: Any) -> ParseError:
    mark = e.problem_mark or e.context_mark
    message = " ".join(s for s in (e.context, e.problem) if s) or "malformed YAML"
    if mark is None:
        return ParseError(message)
    return ParseError(message, mark.line + 1, mark.column + 1)


class _Open:
    """A collection being composed: its node, anchor, items so far and expanded size."""

    __slots__ = ("anchor", "items", "node", "size")

    def __init__(self, node: yaml.Node, anchor: str | None) -> None:
        self.node, self.anchor = node, anchor
        self.items: list[yaml.Node] = []
        self.size = 1


def _at(mark: Any) -> tuple[int, int] | tuple[()]:
    return (mark.line + 1, mark.column + 1) if mark is not None else ()


def _compose(loader: Any, max_depth: int, max_nodes: int) -> yaml.Node:
    """One document's root node, from the event after DOCUMENT-START to its end. As PyYAML's
    composer, but a loop, with the caps; an alias is the same node as its anchor."""
    import yaml

    anchors: dict[str, tuple[yaml.Node, int]] = {}
    open_anchors: set[str] = set()
    stack: list[_Open] = []
    while True:
        event = loader.get_event()
        anchor = getattr(event, "anchor", None)
        # libyaml's marks are its own class, with the same fields as PyYAML's.
        start: Any = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            if anchor not in anchors:
                what = "inside its own anchor" if anchor in open_anchors else "never defined"
                raise ParseError(f"alias *{anchor} is {what}", *_at(event.start_mark))
            node, size = anchors[anchor]
        else:
            if anchor is not None and (anchor in anchors or anchor in open_anchors):
                raise ParseError(f"anchor &{anchor} is defined twice", *_at(event.start_mark))
            if isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                end: Any = event.end_mark
                node = yaml.ScalarNode(tag, event.value, start, end, style=event.style)
                size = 1
                if anchor is not None:
                    anchors[anchor] = (node, size)
            elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                if len(stack) >= max_depth:
                    raise LimitError(_too_deep(max_depth), *_at(event.start_mark))
                kind = (
                    yaml.SequenceNode
                    if isinstance(event, yaml.SequenceStartEvent)
                    else yaml.MappingNode
                )
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(kind, None, event.implicit)
                opened = kind(tag, [], start, None, flow_style=event.flow_style)
                stack.append(_Open(opened, anchor))
                if anchor is not None:
                    open_anchors.add(anchor)
                continue
            elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                done = stack.pop()
                node, size = done.node, done.size
                node.end_mark = event.end_mark
                if isinstance(node, yaml.MappingNode):
                    node.value = list(zip(done.items[::2], done.items[1::2], strict=True))
                else:
                    node.value = done.items
                if done.anchor is not None:
                    open_anchors.discard(done.anchor)
                    anchors[done.anchor] = (node, size)
            else:  # pragma: no cover - the parser only yields node events inside a document
                raise ParseError(f"unexpected {type(event).__name__}", *_at(event.start_mark))
        if size > max_nodes or (stack and stack[-1].size + size > max_nodes):
            raise LimitError(
                f"expands to more than {max_nodes} nodes (aliases repeating aliases)",
                *_at(event.start_mark),
            )
        if not stack:
            return node
        stack[-1].items.append(node)
        stack[-1].size += size


def _documents(
    text: str, max_depth: int, max_nodes: int, single: bool
) -> list[tuple[yaml.Node, Any]]:
    import yaml

    loader = _yaml_loader(text)
    out: list[tuple[yaml.Node, Any]] = []
    try:
        loader.get_event()  # STREAM-START
        while not loader.check_event(yaml.StreamEndEvent):
            if single and out:
                event = loader.peek_event()
                raise ParseError(
                    "expected a single document, but found another", *_at(event.start_mark)
                )
            loader.get_event()  # DOCUMENT-START
            node = _compose(loader, max_depth, max_nodes)
            loader.get_event()  # DOCUMENT-END
            # Merge keys (``<<: *a``) are followed by recursion: a long chain of them is refused
            # as too deep below; the nodes they bring in were counted above.
            out.append((node, loader.construct_document(node)))
    except yaml.MarkedYAMLError as e:
        raise _marked(e) from None
    except yaml.YAMLError as e:
        raise ParseError(str(e) or "malformed YAML") from None
    except RecursionError:
        raise LimitError(_too_deep(max_depth)) from None
    finally:
        loader.dispose()
    return out


def load_yaml_node(
    text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> tuple[yaml.Node | None, Any]:
    """The single document's node (for line numbers) and value; ``(None, None)`` when empty."""
    docs = _documents(text, max_depth, max_nodes, single=True)
    return docs[0] if docs else (None, None)


def load_yaml(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """The value of a single YAML document (``None`` when empty), read safely."""
    return load_yaml_node(text, max_depth=max_depth, max_nodes=max_nodes)[1]


def load_yaml_documents(
    text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> list[Any]:
    """The values of every document of a YAML stream; the caps apply to each."""
    return [value for _, value in _documents(text, max_depth, max_nodes, single=False)]


# --- files --------------------------------------------------------------------------------------


def read_bounded(path: str | Path, max_bytes: int) -> bytes:
    """A file's bytes, refused past ``max_bytes`` without reading further: ``/dev/zero``, a
    huge file or an endless pipe cost at most ``max_bytes``. ``OSError`` when unreadable."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise LimitError(f"is larger than {max_bytes} bytes")
    return data
