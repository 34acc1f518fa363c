"""Pydantic models of everything ``ledger`` stores. No I/O here.

The names below load on first use (PEP 562): importing a submodule such as
``ledger.records.plain`` must not import pydantic, which ``ledger record`` avoids on its path
(about 0.1 s of every run's start-up; ledger/records/plain.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import RECORD_TYPES, JsonFloat, Oid, Record, Timestamp, record_from_json
    from .tree import Tree, TreeEntry, safe_relpath

__all__ = [
    "RECORD_TYPES",
    "JsonFloat",
    "Oid",
    "Record",
    "Timestamp",
    "Tree",
    "TreeEntry",
    "record_from_json",
    "safe_relpath",
]

_HOME = {"Tree": ".tree", "TreeEntry": ".tree", "safe_relpath": ".tree"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME.get(name, ".base"), __name__), name)
    globals()[name] = value
    return value
