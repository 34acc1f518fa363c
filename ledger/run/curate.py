"""``ledger tag``, ``ledger rename``, ``ledger retract``: curating a run without touching it.

A run record is sealed and never changes. What people decide about it later is written as a
new curation record (``ledger.records.curation``) and a log line moving ``curation/<run_id>``
(op ``tag``, ``rename`` or ``retract``), so it is folded, verified, indexed, pushed and
reindexed like every other ref change, and the chain of curation records is its history.
Nothing is deleted: a retracted run stays in the ledger, replayable and verifiable; ``ls``
hides it unless asked, and ``ledger audit`` warns when a claim rests on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .._canonical import format_datetime
from ..errors import LedgerError, UsageError
from ..store import Store
from .find import backed_ref, resolve_run

__all__ = [
    "MAX_NAME",
    "MAX_REASON",
    "Curated",
    "curation_ref",
    "parse_tag_args",
    "read_curation",
    "rename_run",
    "retract_run",
    "retracted_runs",
    "tag_run",
]

MAX_NAME = 200
MAX_TAG = 200  # key and value, each
MAX_REASON = 2000
_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Curated:
    run_id: str
    oid: str  # the new curation record
    record: dict[str, Any]


def curation_ref(run_id: str) -> str:
    return f"curation/{run_id}"


def parse_tag_args(pairs: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; UsageError naming the first pair that is not KEY=VALUE."""
    if not pairs:
        raise UsageError("no tags given", hint="e.g. `ledger tag RUN dataset=cifar10 seed=3`")
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _KEY.match(key) or not value or _CONTROL.search(value):
            raise UsageError(
                f"tag {pair!r} is not KEY=VALUE (a key of letters, digits and _ . : / -, "
                "then =, then a value on one line)",
                hint="e.g. `ledger tag RUN dataset=cifar10`",
            )
        if len(key) > MAX_TAG or len(value) > MAX_TAG:
            raise UsageError(f"tag {pair[:40]!r}...: keys and values are at most {MAX_TAG} chars")
        out[key] = value
    return out


def _one_line(text: str, what: str, cap: int) -> str:
    text = text.strip()
    if not text:
        raise UsageError(f"the {what} is empty", hint=f"give the {what} as text")
    if _CONTROL.search(text):
        raise UsageError(f"the {what} must be one line of text, without control characters")
    if len(text) > cap:
        raise UsageError(f"the {what} is {len(text)} characters; at most {cap} are kept")
    return text


def read_curation(store: Store, run_id: str) -> tuple[str | None, dict[str, Any] | None]:
    """(record id, record) of run ``run_id``'s curation, as the log backs it; (None, None)
    when it was never curated."""
    oid = backed_ref(store, curation_ref(run_id))
    if oid is None:
        return None, None
    rec = store.get_json(oid)  # re-hashed on read
    if not isinstance(rec, dict) or rec.get("kind") != "curation" or rec.get("run_id") != run_id:
        raise LedgerError(
            f"the curation ref of run {run_id} names {oid}, which is not its curation record",
            hint="run `ledger verify`",
        )
    return oid, rec


def retracted_runs(store: Store, warnings: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each retracted run's id -> its curation record (the log backs each ref read)."""
    from .find import backed_refs

    out: dict[str, dict[str, Any]] = {}
    for name, oid in backed_refs(store, "curation/", warnings):
        try:
            rec = store.get_json(oid)
        except LedgerError as e:
            if warnings is not None:
                warnings.append(f"{name}: {e.message}")
            continue
        run_id = name.split("/", 1)[1]
        if isinstance(rec, dict) and rec.get("run_id") == run_id and rec.get("retracted") is True:
            out[run_id] = rec
    return out


def _curate(store: Store, text: str, op: str, change: dict[str, Any]) -> Curated:
    from ..records.curation import Curation

    run_id = resolve_run(store, text)  # an unknown, ambiguous or unbacked run is refused
    ref = curation_ref(run_id)
    # Curators take their own lock, so that the record's ``previous`` is what the ref holds
    # when the line is appended (Store.set_ref takes the refs lock inside it).
    with store.lock("curation"):
        old, before = read_curation(store, run_id)
        before = before or {}
        if op == "retract" and before.get("retracted") is True:
            raise UsageError(
                f"run {run_id} is already retracted ({before.get('reason')!r}, "
                f"{before.get('created')}); nothing was written",
                hint="a retraction is never undone; `ledger show` and `ls --retracted` show it",
            )
        rec = Curation(
            run_id=run_id,
            op=op,  # type: ignore[arg-type]
            previous=old,
            created=datetime.now(UTC),
            name=before.get("name"),
            tags=dict(before.get("tags") or {}),
            retracted=before.get("retracted") is True,
            reason=before.get("reason"),
        ).to_json()
        if "tags" in change:
            rec["tags"] = {**rec["tags"], **change.pop("tags")}
        rec.update(change)
        rec["created"] = format_datetime(datetime.now(UTC))
        Curation.model_validate(rec)
        oid = store.put_json(rec)
        store.set_ref(ref, oid, op=op)
    return Curated(run_id, oid, rec)


def tag_run(store: Store, text: str, tags: dict[str, str]) -> Curated:
    """Set ``tags`` on a run (over its recorded tags and earlier ``ledger tag``\\ s)."""
    if not tags:
        raise UsageError("no tags given", hint="e.g. `ledger tag RUN dataset=cifar10`")
    return _curate(store, text, "tag", {"tags": dict(tags)})


def rename_run(store: Store, text: str, name: str) -> Curated:
    """Give a run a new name (``ls``, ``show NAME`` and the read API use it)."""
    return _curate(store, text, "rename", {"name": _one_line(name, "name", MAX_NAME)})


def retract_run(store: Store, text: str, reason: str) -> Curated:
    """Retract a run: hidden from ``ls``, warned about by ``audit``, never deleted."""
    why = _one_line(reason, "reason", MAX_REASON)
    return _curate(store, text, "retract", {"retracted": True, "reason": why})
