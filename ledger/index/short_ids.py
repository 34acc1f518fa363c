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
    from .db import Index

__all__ = ["MIN_LENGTH", "match_short_id", "short_ids", "short_ids_of"]

MIN_LENGTH = 6
_HEX = re.compile(r"[0-9a-f]{4,}")


def tail_of(run_id: str) -> str:
    """The random part of a run id, which a short id abbreviates."""
    return run_id.rsplit("-", 1)[-1]


_tail = tail_of


def short_ids(
    run_ids: Iterable[str], *, avoid: Iterable[str] = (), only: Iterable[str] | None = None
) -> dict[str, str]:
    """``{run id: short id}``. A short id is unique among the tails, is no prefix of any run id
    (that would resolve as an id prefix first) and is no run name in ``avoid``; a run whose
    whole tail cannot satisfy that keeps its full id. ``only``: just these runs' (a page of a
    listing), still unique among all of ``run_ids``."""
    ids = sorted(set(run_ids))
    tails = sorted(_tail(i) for i in ids)
    taken = set(avoid)

    def count(sorted_texts: list[str], prefix: str) -> int:
        # How many start with ``prefix``: a range of the sorted list (O(log n), not a scan).
        lo = bisect_left(sorted_texts, prefix)
        return bisect_left(sorted_texts, prefix + "\U0010ffff", lo) - lo

    out: dict[str, str] = {}
    for run_id in ids if only is None else dict.fromkeys(only):
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


def short_ids_of(store: Store, only: Iterable[str] | None = None) -> dict[str, str]:
    """Short ids of every run in ``store``, or of the runs ``only`` names (run names are
    avoided, since names resolve first). With ``only``, each is found with a few lookups in
    the index (its ``refs``, ``run_tails`` and ``runs.name``), not by reading every run id."""
    from .db import Index

    with Index(store) as index:
        index.sync()
        if only is not None:
            return {run_id: _short_id(index, run_id) for run_id in only}
        names = {r["name"] for r in index.query("SELECT DISTINCT name FROM runs", ()) if r["name"]}
    ids = [name.split("/", 1)[1] for name in store.refs.names("runs/")]
    return short_ids(ids, avoid=names)


def _short_id(index: Index, run_id: str) -> str:
    """``short_ids``' rule, asked of the index."""

    def some(sql: str, *args: str) -> int:
        return len(index.query(sql + " LIMIT 2", args))

    tail = _tail(run_id)
    for n in range(MIN_LENGTH, len(tail) + 1):
        cand = tail[:n]
        if (
            some("SELECT 1 FROM run_tails WHERE tail >= ? AND tail < ?", cand, cand + _TOP) == 1
            and some("SELECT 1 FROM refs WHERE name >= ? AND name < ?", *_run_refs(cand)) == 0
            and some("SELECT 1 FROM runs WHERE name = ?", cand) == 0
        ):
            return cand
    return run_id


_TOP = "\U0010ffff"


def _run_refs(prefix: str) -> tuple[str, str]:
    return f"runs/{prefix}", f"runs/{prefix}{_TOP}"
