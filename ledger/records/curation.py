"""A run's curation: the name, tags and retraction given to it after the fact.

A run record never changes (it is sealed); what people decide about a run later is a chain of
curation records under the ref ``curation/<run_id>``, one per ``ledger tag``, ``ledger rename``
or ``ledger retract``. Each record holds the whole curated state (so a reader reads one record)
and links the one it replaces (``previous``, the ref's old value), so the chain is the history.
A retraction is never undone: every later record carries it (``ledger verify`` checks).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Oid, Record, Timestamp

__all__ = ["CURATION_OPS", "Curation"]

CURATION_OPS = ("tag", "rename", "retract")


class Curation(Record):
    KIND = "curation"
    SCHEMA = 1

    kind: Literal["curation"] = "curation"
    run_id: str
    op: Literal["tag", "rename", "retract"]  # the act this record logs
    previous: Oid | None  # the curation record this one replaces (None: the first)
    created: Timestamp
    name: str | None = None  # the run's name from now on (None: its recorded name)
    tags: dict[str, str] = Field(default_factory=dict)  # over the run record's own tags
    retracted: bool = False
    reason: str | None = None  # why it was retracted
