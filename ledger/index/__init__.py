"""The derived SQLite index and what reads it: a cache of the store, rebuildable from it.

One job per module: ``db`` opens the index and folds the log into it (the only module that talks
SQLite, through ``_sqlite``); ``rows`` and ``tables`` are the indexers of run and verdict records
and of the query tables; ``query`` parses ``ls --where/--columns``; ``short_ids`` abbreviates run
ids; ``checked`` rebuilds each displayed row from its hashed record; ``consistency`` checks the
log against the records and the index against the log.
"""

from __future__ import annotations

from .db import INDEX_VERSION, Index, IndexDamagedError, Indexer, rebuild_index, register_indexer

__all__ = [
    "INDEX_VERSION",
    "Index",
    "IndexDamagedError",
    "Indexer",
    "rebuild_index",
    "register_indexer",
]
