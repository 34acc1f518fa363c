"""Short run ids: the shortest prefix (at least 6 hex digits) of a run id's random tail that
names exactly one run, like git's abbreviated hashes.

A run id is ``<UTC start time>-<8 random hex digits>``; runs started in the same minute share a
long prefix, so the tail is what tells them apart. Every command that takes a run accepts a short
id; ``ledger ls`` prints them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["MIN_LENGTH", "match_short_id", "short_ids", "short_ids_of"]

MIN_LENGTH = 6
_HEX = re.compile(r"[0-9a-f]{4,}")


def _tail(run_id: str) -> str:
    return run_id.rsplit("-", 1)[-1]


def short_ids(run_ids: Iterable[str], *, avoid: Iterable[str] = ()) -> dict[str, str]:
    """``{run id: short id}``. A short id is unique among the tails, is no prefix of any run id
    (that would resolve as an id prefix first) and is no run name in ``avoid``; a run whose
    whole tail cannot satisfy that keeps its full id."""
    ids = sorted(set(run_ids))
    tails = sorted(_tail(i) for i in ids)
    taken = set(avoid)

    def count(sorted_texts: list[str], prefix: str) -> int:
        # How many start with ``prefix``: a range of the sorted list (O(log n), not a scan).
        lo = bisect_left(sorted_texts, prefix)
        return bisect_left(sorted_texts, prefix + "\U0010ffff", lo) - lo

    out: dict[str, str] = {}
    for run_id in ids:
        tail = _tail(run_id)
        out[run_id] = run_id
        for n in range(MIN_LENGTH, len(tail) + 1):
            cand = tail[:n]
            if count(tails, cand) == 1 and count(ids, cand) == 0 and cand not in taken:
                out[run_id] = cand
                break
    return out


def match_short_id(run_ids: Iterable[str], text: str) -> list[str]:
    """Run ids whose random tail starts with ``text`` (4 or more lowercase hex digits)."""
    if not _HEX.fullmatch(text):
        return []
    return [i for i in run_ids if "-" in i and _tail(i).startswith(text)]


def short_ids_of(store: Store) -> dict[str, str]:
    """Short ids of every run in ``store`` (run names are avoided, since names resolve first)."""
    from .db import Index

    ids = [name.split("/", 1)[1] for name in store.refs.names("runs/")]
    with Index(store) as index:
        index.sync()
        names = {r["name"] for r in index.query("SELECT DISTINCT name FROM runs", ()) if r["name"]}
    return short_ids(ids, avoid=names)
