"""How a run's curation (``curation/<run_id>``: ``ledger tag``, ``rename``, ``retract``) arrives
from a remote or a package: as its chain of records, never as one ref set over another.

A curation ref names the newest record of a chain, each record naming the one it replaces
(``previous``). What arrives is checked link by link and written as the chain's own log lines
(op ``tag``, ``rename`` or ``retract``, with the origin's id and head as an import line has), so
``ledger verify`` folds a pulled retraction exactly as one made here. The rule, for each run,
over the chain here (if any) and every chain brought (one per origin that has it):

- one of them holds every other in its chain: that one wins. Here already: nothing is written
  (a remote that is behind never takes back what was curated here). Brought: the links this
  ledger lacks are appended, oldest first.
- none does (they diverged: curated on two sides since they last met): refused, naming the
  run and both sides' last act, and saying when the side that lacks it is a retraction.
- a link that is not a curation record of that run (another run's, another kind, unreadable)
  refuses the arrival; a missing link is the door's missing object; a record that drops a
  retraction its predecessor made, a move the fold does not allow, a time before the record's
  own are refused by the log-line checks ``ledger verify`` runs (``check_new_lines``).

A retraction is therefore never lost: it stays here whatever a remote holds, and a brought
chain that would replace one is either behind (ignored) or diverged (refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import LedgerError
from ..store import Store
from ..store.verify import Problem

__all__ = ["CURATION_PREFIX", "Link", "curation_links"]

CURATION_PREFIX = "curation/"
MAX_CHAIN = 100_000  # links one chain may have (a forged endless chain is refused)


@dataclass(frozen=True)
class Link:
    """One log line to append: ``ref`` moved from ``old`` to ``oid`` with the record's op."""

    ref: str
    oid: str
    op: str
    old: str | None
    note: dict[str, Any]


def _chain(
    store: Store, ref: str, run_id: str, head: str
) -> tuple[list[tuple[str, dict[str, Any]]] | None, str | None]:
    """(chain oldest first, None), or (None, what is wrong), or (None, None) when a link is
    missing (the door's walk names it)."""
    out: list[tuple[str, dict[str, Any]]] = []
    oid: Any = head
    while oid is not None:
        if not isinstance(oid, str) or len(out) >= MAX_CHAIN:
            return None, f"{ref}: the chain of {head} is broken or longer than {MAX_CHAIN} links"
        if not store.objects.has(oid):
            return None, None
        try:
            rec = store.get_json(oid)
        except LedgerError as e:
            return None, f"{ref}: record {oid} of its chain is unreadable: {e.message}"
        if not isinstance(rec, dict) or rec.get("kind") != "curation":
            return None, f"{ref}: {oid} in its chain is not a curation record"
        if rec.get("run_id") != run_id:
            return None, (
                f"{ref}: {oid} in its chain is the curation of run {rec.get('run_id')!r}, "
                f"not of run {run_id}"
            )
        out.append((oid, rec))
        oid = rec.get("previous")
    out.reverse()
    return out, None


def _last_act(rec: dict[str, Any]) -> str:
    if rec.get("retracted") is True:
        return f"retracted ({rec.get('reason')!r}, {rec.get('created')})"
    return f"{rec.get('op')} at {rec.get('created')}"


def curation_links(
    store: Store, ref: str, brought: dict[str, dict[str, Any]]
) -> tuple[list[Link], list[Problem]]:
    """The log lines that bring ``ref`` up to date with ``brought`` (each head brought -> the
    note of its import: origin and origin head), by the rule of the module docstring; or the
    problems that refuse it. Call it under ``store.lock("curation")`` (what ``ledger tag``
    holds) so that the chain here does not move before the lines are written."""
    run_id = ref[len(CURATION_PREFIX) :]
    here = store.refs.get(ref)
    heads = list(dict.fromkeys([*([here] if here else []), *brought]))
    chains: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    problems: list[Problem] = []
    for head in heads:
        chain, wrong = _chain(store, ref, run_id, head)
        if wrong is not None:
            problems.append(Problem("curation-chain", ref, wrong))
        elif chain is not None:
            chains[head] = chain
    if problems or len(chains) < len(heads):
        return [], problems  # a missing link: door_problems' walk reports it
    members = {head: {o for o, _ in chain} for head, chain in chains.items()}
    top = next((h for h in heads if all(o in members[h] for o in heads)), None)
    if top is None:
        theirs = [h for h in heads if h != here]
        here_rec = chains[here][-1][1] if here else None
        sides = "; ".join(f"brought: {_last_act(chains[h][-1][1])}" for h in theirs)
        what = f"here: {_last_act(here_rec)}; {sides}" if here_rec else sides
        dropped = here_rec is not None and here_rec.get("retracted") is True
        lost = " (the curation brought drops the retraction made here)" if dropped else ""
        return [], [
            Problem(
                "curation-diverged",
                ref,
                f"the curation of run {run_id} here and the one brought have diverged{lost}: "
                f"{what}; a curation chain is only ever extended, never replaced",
            )
        ]
    if top == here:
        return [], []  # the chain here holds every one brought
    chain = chains[top]
    start = 0 if here is None else [o for o, _ in chain].index(here) + 1
    note = brought[top]
    return [
        Link(ref, oid, str(rec.get("op")), rec.get("previous"), dict(note))
        for oid, rec in chain[start:]
    ], []
