"""Values a replay cannot keep equal by construction, and how each is compared instead.

A replay runs the same program elsewhere and later: in a workspace, not in the original working
tree, at another speed. So two kinds of value differ even when every weight and loss comes back
bit for bit, and neither says anything about reproducibility:

- absolute paths under the working tree (a checkpoint's ``best_model_path``): compared after
  mapping each side's root to one token (``PathMap``); paths under the ledger, which a replay
  shares with its original, are left as they are;
- wall-clock timings and throughputs (``train_runtime``, ``samples_per_second``, ``mfu``), and
  process ids and host names: not compared, but listed beside the verdict
  (``volatile_reason``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

__all__ = [
    "KNOWN_TIMING",
    "PathMap",
    "not_compared_text",
    "volatile_names",
    "volatile_reason",
]

# What the adapters and the frameworks log that measures the clock, not the computation.
KNOWN_TIMING = frozenset(
    {
        # transformers Trainer (train, evaluate, predict)
        "train_runtime",
        "train_samples_per_second",
        "train_steps_per_second",
        "eval_runtime",
        "eval_samples_per_second",
        "eval_steps_per_second",
        "test_runtime",
        "test_samples_per_second",
        "test_steps_per_second",
        "predict_runtime",
        "predict_samples_per_second",
        "predict_steps_per_second",
        # Lightning: the Timer callback's state, ThroughputMonitor
        "time_elapsed",
        "batches_per_sec",
        "samples_per_sec",
        "items_per_sec",
        "flops_per_sec",
    }
)
# A name part that means the clock wherever it stands ("train_runtime", "throughput/x").
_TIMING_PARTS = frozenset(
    {"runtime", "throughput", "mfu", "elapsed", "walltime", "wallclock", "timestamp", "duration"}
)
# A name part that means the clock only as the name's last part ("epoch_time", "time_ms"), so
# "time_steps" and "timestep" stay compared.
_TIMING_LAST = frozenset({"time", "seconds", "secs"})
_UNITS = frozenset({"s", "sec", "ms", "us", "ns", "min"})  # "step_time_ms" ends in "time"
_PER_TIME = frozenset({"second", "sec", "s"})  # "tokens_per_sec", "it_per_s"
# Whole names that identify the process or the machine, not the computation.
_PROCESS_NAMES = frozenset({"pid", "ppid", "hostname", "host_name", "node_name"})
_SPLIT = re.compile(r"[^a-z0-9]+")


def _parts(name: str) -> list[str]:
    return [p for p in _SPLIT.split(name.lower()) if p]


def _is_timing(parts: list[str]) -> bool:
    if any(p in _TIMING_PARTS for p in parts):
        return True
    if any(a == "per" and b in _PER_TIME for a, b in itertools.pairwise(parts)):
        return True
    last = parts[:-1] if len(parts) > 1 and parts[-1] in _UNITS else parts
    return bool(last) and last[-1] in _TIMING_LAST


def volatile_reason(name: str, declared: Sequence[str] = ()) -> str | None:
    """Why a value called ``name`` is not compared: ``"timing"``, ``"process"`` or None.

    ``name`` is a metric name, or the last key of a value in a document or checkpoint.
    ``declared`` holds the user's own timing names (exact, or globs): they are timings too.
    """
    if any(name == d or fnmatchcase(name, d) for d in declared):
        return "timing"
    if name in KNOWN_TIMING:
        return "timing"
    parts = _parts(name)
    if _is_timing(parts):
        return "timing"
    if "_".join(parts) in _PROCESS_NAMES:
        return "process"
    return None


def volatile_names(names: Iterable[str], declared: Sequence[str] = ()) -> dict[str, str]:
    """Name -> reason for each of ``names`` a replay cannot keep equal (a metric's series)."""
    out = {}
    for name in sorted(set(names)):
        reason = volatile_reason(name, declared)
        if reason is not None:
            out[name] = reason
    return out


def not_compared_text(reasons: dict[str, str], limit: int = 8) -> str:
    """``not compared: train_runtime, train_steps_per_second (timing)``: the names grouped by
    reason, the first ``limit`` of each group named."""
    groups: dict[str, list[str]] = {}
    for name, reason in sorted(reasons.items()):
        groups.setdefault(reason, []).append(name)
    parts = []
    for reason, names in groups.items():
        shown = ", ".join(names[:limit])
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        parts.append(f"{shown}{more} ({reason})")
    return "not compared: " + "; ".join(parts)


Side = Literal["original", "replay"]


@dataclass(frozen=True)
class PathMap:
    """The original's working tree and the replay's workspace, read as one place.

    ``roots`` pairs the spellings of each root on each side (a path and its real path);
    ``keep`` holds paths both runs share (the ledger): a path under one of them is compared as
    written, even when it lies inside the working tree. The longest match wins, so a ledger in
    the working tree is kept, and a working directory below the root maps as itself.
    """

    roots: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    keep: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        pairs: Iterable[tuple[Iterable[str], Iterable[str]]],
        keep: Iterable[str] = (),
    ) -> PathMap:
        """From (original spellings, replay spellings) pairs; "/" and empty spellings, which
        would map every absolute path, are dropped."""

        def clean(paths: Iterable[str]) -> tuple[str, ...]:
            out = (p.rstrip("/") for p in paths)
            return tuple(dict.fromkeys(p for p in out if p))

        roots = tuple((clean(a), clean(b)) for a, b in pairs)
        return cls(tuple((a, b) for a, b in roots if a and b), clean(keep))

    def _pattern(self, side: Side) -> tuple[re.Pattern[str], list[str]] | None:
        spellings: list[tuple[str, str]] = []
        for i, (a, b) in enumerate(self.roots):
            for path in a if side == "original" else b:
                spellings.append((path, f"\x00root{i}\x00"))
        for path in self.keep:
            spellings.append((path, path))  # itself: left as written
        if not spellings:
            return None
        spellings.sort(key=lambda s: len(s[0]), reverse=True)
        tokens = [token for _, token in spellings]
        # A root counts only as a whole path: "/home/u/proj" is not a prefix of ".../proj2".
        alternatives = "|".join(f"({re.escape(path)})" for path, _ in spellings)
        return re.compile(f"(?<![\\w.~-])(?:{alternatives})(?![^/\\s'\"\\]),;:])"), tokens

    def canonical(self, text: str, side: Side) -> str:
        """``text`` with each root of ``side`` replaced by a token both sides share."""
        found = self._pattern(side)
        if found is None:
            return text
        pattern, tokens = found
        return pattern.sub(lambda m: tokens[(m.lastindex or 1) - 1], text)

    def same(self, original: str, replay: str) -> bool:
        """Whether two different strings name the same place once the roots are mapped."""
        return bool(self.roots) and (
            self.canonical(original, "original") == self.canonical(replay, "replay")
        )

    def describe(self) -> str:
        a, b = self.roots[0]
        return f"paths under {a[0]} read as under the replay's {b[0]}"
