"""sqlite_utils, imported without pandas and numpy (the only place that imports it)."""

from __future__ import annotations

import importlib.abc
import sys
import threading


class _SkipInThisThread(importlib.abc.MetaPathFinder):
    """Makes ``import NAME`` fail for the listed names, in the importing thread only."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{name} is not needed by the ledger index", name=name)
        return None


def _import_sqlite_utils() -> None:
    """sqlite_utils imports pandas and numpy when installed, only to map their scalar types
    (the index stores none): 0.3 s of every ``ledger record``, ``ls`` and ``show``
    (bench/bench_record.py). Import it without them; other threads import as usual."""
    if "sqlite_utils.db" in sys.modules:
        return
    skip = _SkipInThisThread(frozenset({"pandas", "numpy"}) - sys.modules.keys())
    sys.meta_path.insert(0, skip)
    try:
        import sqlite_utils.db  # noqa: F401
    finally:
        sys.meta_path.remove(skip)


_import_sqlite_utils()
import sqlite_utils  # noqa: E402 - must follow the guarded import

__all__ = ["sqlite_utils"]
