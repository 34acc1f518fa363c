"""Links between objects (docs/format.md, "Links and reachability").

A record is a JSON object with ``kind`` and ``schema``. Every string inside it that is an object
id is a link of one of three sorts, decided by the key it sits under:

- a **link** (any key but those below): the object must exist; ``ledger verify`` reports it
  missing; gc keeps it.
- a **content link** (a key named ``digest`` or ending in ``_digest``): the id of content that
  may or may not be stored (an input copied into the store, or only hashed with
  ``--no-store-inputs``; a directory listing). When the object exists, gc keeps it exactly like
  a link; when it does not, that is not an error of the ledger. This is what keeps a run's
  stored inputs: their ids are digests, and the records that name them are reachable.
- **not a link** (``checkpoint_digest``): a checkpoint a run saved or loaded. Checkpoint refs
  and ``keep_last`` retention decide how long a checkpoint lives, not the runs that mention it.

Blobs (file contents, tensor bytes) have no links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._canonical import parse_json
from .._hashing import OID_RE
from .objects import ObjectStore

__all__ = [
    "NOT_LINKS",
    "as_record",
    "iter_links",
    "links_in",
    "links_of",
    "may_be_record",
    "reachable",
]

# Objects whose payload (the file less its header: ``is_record_size``) is this or more are
# never records: skip parsing them.
MAX_RECORD = 64 << 20

# Keys whose ids are never followed, not even as content links.
NOT_LINKS = frozenset({"checkpoint_digest"})


def _is_content_key(key: str) -> bool:
    return key == "digest" or key.endswith("_digest")


def iter_links(value: Any, *, content: bool = False) -> Iterator[tuple[str, bool]]:
    """``(id, required)`` for every link in ``value``; ``required`` False for content links."""
    if isinstance(value, str):
        if OID_RE.match(value):
            yield value, not content
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in NOT_LINKS:
                continue
            yield from iter_links(v, content=content or _is_content_key(k))
    elif isinstance(value, list):
        for v in value:
            yield from iter_links(v, content=content)


def may_be_record(objects: ObjectStore, oid: str) -> bool:
    """Whether ``oid`` is small enough to be read as a record: its payload (the file less its
    header) under ``MAX_RECORD`` bytes, whatever its layout, so that gc's walk, a push and a
    pull agree on it. A stat for most objects; the header is read only for files over the
    limit. Raises on a missing object."""
    disk = objects.size_on_disk(oid)
    return disk <= MAX_RECORD or objects.payload_size(oid) < MAX_RECORD


def links_of(objects: ObjectStore, oid: str) -> list[tuple[str, bool]]:
    """``(id, required)`` links of a record; ``[]`` for blobs. Raises on a missing object."""
    if not may_be_record(objects, oid):
        return []
    with objects.open(oid) as f:
        head = f.read(1)
        if head != b"{":
            return []
        data = head + f.read()
    value = as_record(data)
    return [] if value is None else links_in(value)


def as_record(data: bytes) -> dict[str, Any] | None:
    """The record ``data`` holds (a JSON object with ``kind`` and ``schema``), or None: a blob.
    For content in hand that is not stored yet (a pull reads a fetched object's links before
    it has its name); ``links_of`` reads stored ones."""
    if data[:1] != b"{":
        return None
    try:
        value = parse_json(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(value, dict) or "kind" not in value or "schema" not in value:
        return None
    return value


def links_in(value: dict[str, Any]) -> list[tuple[str, bool]]:
    """``(id, required)`` links of a record (``as_record``), each once: required if any
    mention of it is."""
    found: dict[str, bool] = {}
    for link, required in iter_links(value):
        found[link] = found.get(link, False) or required
    return list(found.items())


def reachable(
    objects: ObjectStore,
    roots: Iterable[str],
    on_missing: Callable[[str, str | None], None] | None = None,
    *,
    touch: bool = False,
) -> set[str]:
    """Every object reachable from ``roots`` through links and content links that exist.
    ``on_missing(oid, parent)`` is called for a missing root or required link (the walk goes
    on); a content link to an absent object is not missing. ``touch``: each object found is
    touched (``ObjectStore.touch``), for a writer about to link them all (an import): gc then
    keeps them as just written."""
    present = objects.touch if touch else objects.has
    seen: set[str] = set()
    stack: list[tuple[str, str | None, bool]] = [(r, None, True) for r in roots]
    while stack:
        oid, parent, required = stack.pop()
        if oid in seen:
            continue
        if not present(oid):
            if required and on_missing is not None:
                on_missing(oid, parent)
            continue
        seen.add(oid)
        try:
            children = links_of(objects, oid)
        except Exception:  # a corrupt record: verify reports it; its links cannot be followed
            children = []
        stack.extend((c, oid, req) for c, req in children)
    return seen
