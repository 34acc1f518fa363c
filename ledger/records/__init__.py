"""Pydantic models of everything ``ledger`` stores. No I/O here."""

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
