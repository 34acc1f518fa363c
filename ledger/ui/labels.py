"""The names runs go by on a chart and in a legend: "name · short id · kind".

The kind of a run is ``original``, or for a replay the way its verdict replayed it:
``bitwise``, ``tolerance``, or ``seed N`` (N the replay's seed root, else its place among the
verdict's replays).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["replay_kinds", "run_label"]


def _seed_root(rec: dict[str, Any]) -> Any:
    seeds = (rec.get("runtime") or {}).get("seeds") if isinstance(rec, dict) else None
    first = seeds[0] if isinstance(seeds, list) and seeds else None
    return first.get("root") if isinstance(first, dict) else None


def replay_kinds(
    verdicts: Sequence[dict[str, Any]], records: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """Replay run id -> its kind, from the verdicts that judged it (the newest wins)."""
    kinds: dict[str, str] = {}
    for v in verdicts:
        mode = str(v.get("mode") or "replay")
        replays = v.get("replays")
        for i, rid in enumerate(replays if isinstance(replays, list) else []):
            if mode == "seeds":
                root = _seed_root(records.get(rid, {}))
                kinds[rid] = f"seed {root if root is not None else i + 1}"
            else:
                kinds[rid] = mode
    return kinds


def run_label(rec: dict[str, Any], short: str, kind: str) -> str:
    """``name · short id · kind``; a run without a name is its short id and kind."""
    name = rec.get("name")
    return " · ".join(str(p) for p in (name, short, kind) if p)
