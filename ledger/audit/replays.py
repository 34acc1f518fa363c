"""Each run's own replay verdict, as recorded by ``ledger replay``, and the --replay seam.

Recorded verdicts are read from the ``verdicts/<run>/<replay>`` refs and their hashed records,
never from the index: an audit must not say "reproduced" because a cache was edited.
``audit(replay=True)`` calls a :data:`Replayer` for every run behind a claim; the audit never
replays by itself, so the caller (the CLI) decides how a run is replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import LedgerError
from ..store import Store

__all__ = ["NO_REPLAY", "REPRODUCED", "ReplayCheck", "Replayer", "recorded_replays"]

NO_REPLAY = "no replay recorded"
REPRODUCED = "reproduced"
# Outcomes of a replay that ran to the end. Anything else (a replay that could not run, or was
# interrupted) says nothing about the run and never hides an earlier completed verdict.
COMPLETED = ("reproduced", "not-reproduced", "inconclusive")


@dataclass(frozen=True)
class ReplayCheck:
    """One replay's outcome for a run: "reproduced", "not-reproduced" or "could-not-replay"."""

    outcome: str
    mode: str | None = None
    summary: str | None = None
    verdict: str | None = None  # oid of the stored verdict record, when there is one
    replay_run: str | None = None  # the replay's run id
    localization: dict[str, Any] | None = None  # where it diverged (settings.localization)

    def describe(self) -> str:
        head = f"{self.outcome} ({self.mode})" if self.mode else self.outcome
        return f"{head}: {self.summary}" if self.summary else head


# (store, run id) -> outcome. The CLI passes one that calls ledger's replay engine.
Replayer = Callable[[Store, str], ReplayCheck]


def recorded_replays(store: Store, warnings: list[str] | None = None) -> dict[str, ReplayCheck]:
    """The latest completed replay verdict of every original run id, from the verdict records
    themselves (never the index); a verdict whose ref file the log does not back is left
    out, and ``warnings`` says so."""
    rows = _from_refs(store, warnings)
    out: dict[str, ReplayCheck] = {}
    for row in sorted(rows, key=lambda r: str(r.get("created") or "")):
        original, outcome = row.get("original"), row.get("outcome")
        if isinstance(original, str) and outcome in COMPLETED:
            if not isinstance(outcome, str):  # `in COMPLETED` matched a string
                raise TypeError(f"outcome {outcome!r} is not a string")
            out[original] = ReplayCheck(
                outcome=outcome,
                mode=_str(row.get("mode")),
                summary=_str(row.get("summary")),
                verdict=_str(row.get("oid")),
                replay_run=_first(row.get("replays")),
                localization=_localization(row.get("settings")),
            )
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _first(value: Any) -> str | None:
    return value[0] if isinstance(value, list) and value and isinstance(value[0], str) else None


def _localization(settings: Any) -> dict[str, Any] | None:
    loc = settings.get("localization") if isinstance(settings, dict) else None
    return loc if isinstance(loc, dict) and isinstance(loc.get("line"), str) else None


def _from_refs(store: Store, warnings: list[str] | None) -> list[dict[str, Any]]:
    from ..run.find import backed_refs

    rows = []
    for _name, oid in backed_refs(store, "verdicts/", warnings):
        try:
            value = store.get_json(oid)
        except LedgerError:
            continue
        if isinstance(value, dict) and value.get("kind") == "verdict":
            rows.append({**value, "oid": oid})
    return rows


def bitwise_replayer(store: Store, run_id: str) -> ReplayCheck:
    """The ``--replay`` seam wired to ``ledger replay`` in bitwise mode."""
    from ..errors import LedgerError
    from ..replay.engine import ReplayInterrupted, ReplayOptions, replay

    try:
        outcome = replay(store, run_id, ReplayOptions(mode="bitwise"))
    except ReplayInterrupted:
        raise  # Ctrl-C stops the audit too; it is no outcome of the run
    except LedgerError as e:
        return ReplayCheck("could-not-replay", "bitwise", e.message, None)
    v = outcome.verdict
    return ReplayCheck(
        v.outcome,
        v.mode,
        v.summary,
        outcome.verdict_oid,
        _first(v.replays),
        _localization(v.settings),
    )
