"""Links between objects: a record is a JSON object with ``kind`` and ``schema``; every string
inside it that is an object id is a link, except values under a key named ``digest`` or ending
in ``_digest``: those name content that need not be stored (an input hashed but not copied, the
digest of a contract). Blobs (file contents, tensor bytes) have no links."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .._canonical import parse_json
from .._hashing import OID_RE
from .objects import ObjectStore

__all__ = ["iter_links", "links_of", "reachable"]

# Larger objects are never records: skip parsing them.
MAX_RECORD = 64 << 20


def iter_links(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if OID_RE.match(value):
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k == "digest" or k.endswith("_digest"):
                continue
            yield from iter_links(v)
    elif isinstance(value, list):
        for v in value:
            yield from iter_links(v)


def links_of(objects: ObjectStore, oid: str) -> list[str]:
    """Object ids a record links to; ``[]`` for blobs. Raises on a missing/corrupt object."""
    if objects.size_on_disk(oid) > MAX_RECORD:
        return []
    with objects.open(oid) as f:
        head = f.read(1)
        if head != b"{":
            return []
        data = head + f.read()
    try:
        value = parse_json(data)
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(value, dict) or "kind" not in value or "schema" not in value:
        return []
    return list(dict.fromkeys(iter_links(value)))


def reachable(objects: ObjectStore, roots: Iterable[str], on_missing: Any = None) -> set[str]:
    """Every object reachable from ``roots``. ``on_missing(oid, parent)`` is called for dangling
    links (the walk goes on); without it they are just skipped."""
    seen: set[str] = set()
    stack: list[tuple[str, str | None]] = [(r, None) for r in roots]
    while stack:
        oid, parent = stack.pop()
        if oid in seen:
            continue
        if not objects.has(oid):
            if on_missing is not None:
                on_missing(oid, parent)
            continue
        seen.add(oid)
        try:
            children = links_of(objects, oid)
        except Exception:  # a corrupt record: verify reports it; its links cannot be followed
            children = []
        stack.extend((c, oid) for c in children)
    return seen
