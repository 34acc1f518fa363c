"""Folding the log into refs: which ref changes the format allows, and the refs that result.

Every reader that turns ``log/chain.jsonl`` into ref values goes through ``Fold``: ``verify``
(refs against the log), ``gc`` (what the log names is reachable), the index (``ledger ls``,
``show``, id resolution), ``refs_at`` (attestations) and whoever checks lines at the door
(import, pull, clone). Each ref is in a *state*; each ref kind has a table of the moves
(state, op) -> state it allows (``KINDS``, written down in docs/format.md, "Transitions").
A line that makes any other move is *refused*: reported, and not applied, so a chained,
well-formed line cannot re-seal a run, flip a verdict or re-import over a ref.

A line must also be about a ref (``ref`` a valid ref name), move it from what it holds
(``old`` equals the ref's value, ``null`` when absent) to an object id (``new``), or to
``null`` exactly when the op is ``delete``. What a line says about its *record* (the record's
kind, status, name fields) needs the objects: ``ledger.index.consistency`` checks that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._hashing import OID_RE
from ..errors import LedgerError
from .log import LogEntry
from .refs import check_ref_name

__all__ = [
    "ABSENT",
    "KINDS",
    "Fold",
    "RefKind",
    "RefState",
    "Refusal",
    "check_transitions",
    "fold_log",
    "judge",
    "kind_of",
]

ABSENT = "absent"  # the state of a ref no accepted line has set, or one deleted


@dataclass(frozen=True)
class RefKind:
    """Refs whose name matches ``pattern``, and the moves they allow: ``moves[(state, op)]`` is
    the state after; ``same_object`` moves are allowed only when ``new`` equals ``old``."""

    name: str
    pattern: re.Pattern[str]
    moves: Mapping[tuple[str, str], str]
    same_object: frozenset[tuple[str, str]] = frozenset()
    why: str = ""  # said when a move is refused


def _kind(
    name: str, pattern: str, moves: dict[tuple[str, str], str], why: str, **kw: Any
) -> RefKind:
    return RefKind(name, re.compile(pattern), moves, why=why, **kw)


# The table (docs/format.md, "Transitions"). Checked in this order; the last matches any ref.
KINDS: tuple[RefKind, ...] = (
    _kind(
        "run",
        r"^runs/[^/]+$",
        {
            (ABSENT, "start"): "running",
            (ABSENT, "seal"): "sealed",  # a sweep's job runs are sealed at once
            ("running", "seal"): "sealed",
            (ABSENT, "import"): "sealed",
        },
        "a run is started once and sealed once; a sealed run never changes",
    ),
    _kind(
        "verdict",
        r"^verdicts/[^/]+/[^/]+$",
        {(ABSENT, "verdict"): "set", (ABSENT, "import"): "set"},
        "a verdict is written once and never changes",
    ),
    _kind(
        "audit",
        r"^audits/[^/]+$",
        {(ABSENT, "audit"): "set", (ABSENT, "import"): "set"},
        "an audit is written once and never changes",
    ),
    _kind(
        "check",
        r"^checks/[^/]+$",
        {(ABSENT, "check"): "set"},
        "a check is written once, by `ledger check`, and never changes",
    ),
    _kind(
        "gate",
        r"^gates/[^/]+$",
        {(ABSENT, "gate"): "set"},
        "a gate is written once, by `ledger gate`, and never changes",
    ),
    _kind(
        "checkpoint step",
        r"^checkpoints/[^/]+/step-\d+$",
        {
            (ABSENT, "checkpoint"): "set",
            ("set", "checkpoint"): "set",  # the same step saved again
            ("set", "delete"): ABSENT,  # retention
            (ABSENT, "import"): "set",
        },
        "a step ref is saved, saved again or deleted by retention",
    ),
    _kind(
        "latest checkpoint",
        r"^checkpoints/[^/]+/latest$",
        {(ABSENT, "publish"): "set", ("set", "publish"): "set", (ABSENT, "import"): "set"},
        "`latest` moves only when a checkpoint is published, and is never deleted",
    ),
    _kind(
        "carried commit",
        r"^sources/git/(?:[0-9a-f]{40}|[0-9a-f]{64})$",
        {(ABSENT, "source"): "set", ("set", "source"): "set", (ABSENT, "import"): "set"},
        "a carried commit's record never changes (it may be stored again, as the same object)",
        same_object=frozenset({("set", "source")}),
    ),
    _kind(
        "curation",
        r"^curation/[^/]+$",
        {
            **{(s, op): "set" for s in (ABSENT, "set") for op in ("tag", "rename")},
            **{("retracted", op): "retracted" for op in ("tag", "rename")},
            (ABSENT, "retract"): "retracted",
            ("set", "retract"): "retracted",
        },
        "a run's curation is tagged, renamed or retracted; a retraction is never undone",
    ),
    _kind(
        "other",
        r"",
        {
            (ABSENT, "set"): "set",
            ("set", "set"): "set",
            ("set", "delete"): ABSENT,
            (ABSENT, "import"): "set",
        },
        "a ref outside the table above is changed by `set`, `delete` and `import` only",
    ),
)


def kind_of(ref: str) -> RefKind:
    return next(k for k in KINDS if k.pattern.match(ref))


@dataclass(frozen=True)
class RefState:
    oid: str
    state: str


@dataclass(frozen=True)
class Refusal:
    line: int  # 1-based line number in the log (or in the entries given)
    ref: str
    message: str


@dataclass
class Fold:
    """Refs as the accepted lines leave them. Feed lines in log order with ``apply``."""

    refs: dict[str, RefState] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    lines: int = 0
    touched: set[str] = field(default_factory=set)  # refs some accepted line changed

    def values(self) -> dict[str, str]:
        return {name: r.oid for name, r in self.refs.items()}

    def apply(self, data: Mapping[str, Any], line: int | None = None) -> Refusal | None:
        """Apply one line (its parsed JSON), or refuse it: the refusal is kept and returned."""
        self.lines += 1
        at = self.lines if line is None else line
        if data.get("unparseable"):
            return None  # the chain check reports it; it moves nothing
        ref = data.get("ref")
        if not isinstance(ref, str):
            return self._refuse(at, str(ref), "the line names no ref")
        problem, after = judge(self.refs.get(ref), data)
        if problem is not None:
            return self._refuse(at, ref, problem)
        new = data.get("new")
        self.touched.add(ref)
        if after == ABSENT:
            self.refs.pop(ref, None)
        else:
            if not isinstance(new, str) or after is None:  # judge allows no such move
                raise TypeError(f"{ref}: a move to {after!r} without an object was allowed")
            self.refs[ref] = RefState(new, after)
        return None

    def _refuse(self, line: int, ref: str, message: str) -> Refusal:
        r = Refusal(line, ref, f"{ref}: {message}; the line is refused (not applied)")
        self.refused.append(r)
        return r


def judge(held: RefState | None, data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(problem, None) when the line may not be applied to a ref that is ``held`` (None:
    absent), else (None, the ref's state after it). ``data`` names the ref."""
    ref, op, old, new = data.get("ref"), data.get("op"), data.get("old"), data.get("new")
    if not isinstance(ref, str):
        return "the line names no ref", None
    try:
        check_ref_name(ref)
    except LedgerError:
        return "not a valid ref name", None
    if not isinstance(op, str):
        return "the line has no op", None
    if (op == "delete") != (new is None):
        return f"op {op!r} has new {new or 'null'}: only `delete` sets nothing", None
    if new is not None and not (isinstance(new, str) and OID_RE.match(new)):
        return f"new is {new!r}, not an object id", None
    have = None if held is None else held.oid
    if old != have:
        return (
            f"old is {old or 'null'} but the lines before it left it at {have or 'nothing'}",
            None,
        )
    kind = kind_of(ref)
    state = ABSENT if held is None else held.state
    after = kind.moves.get((state, op))
    if after is None:
        allowed = sorted(o for (s, o) in kind.moves if s == state)
        can = f"only {', '.join(allowed)}" if allowed else "nothing"
        return (
            f"op {op!r} is not allowed on {'an' if state[0] in 'aeiou' else 'a'} {state} "
            f"{kind.name} ref: {kind.why}; "
            f"from {state} {can} may follow",
            None,
        )
    if (state, op) in kind.same_object and new != old:
        return f"op {op!r} may set it again only to the object it holds: {kind.why}", None
    return None, after


def check_transitions(
    entries: Iterable[LogEntry | Mapping[str, Any]], start: Fold | None = None
) -> list[Refusal]:
    """The lines of ``entries`` (log entries or their parsed JSON, in log order) that make a
    move the format does not allow, folding from ``start`` (default: an empty ledger).
    ``start`` is updated in place with the accepted lines."""
    fold = Fold() if start is None else start
    before = len(fold.refused)
    for e in entries:
        fold.apply(e.data if isinstance(e, LogEntry) else e)
    return fold.refused[before:]


def fold_log(entries: Iterable[LogEntry]) -> Fold:
    """The fold of a whole log: its refs, and the lines it refused."""
    fold = Fold()
    for e in entries:
        fold.apply(e.data)
    return fold
