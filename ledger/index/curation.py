"""How curation records appear in the index: ``curation`` (one row per curated run: its name,
tags and retraction) and ``curated_tags`` (the tags, one row each, for ``--where tags.K``).

Like every table here it is a fold of the log; what ``ls`` shows is read back from the
curation record itself (``ledger.index.checked.checked_curation``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._indexers import Indexer, JsonReader, Row, register_indexer
from ._sqlite import Database

__all__ = ["CURATION_INDEXER"]


def _tables(db: Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS curation (ref TEXT PRIMARY KEY, run_id TEXT, oid TEXT, "
        "name TEXT, tags TEXT, retracted INTEGER, reason TEXT)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS curation_run_id ON curation(run_id)")
    db.execute("CREATE INDEX IF NOT EXISTS curation_name ON curation(name)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS curated_tags (run_id TEXT NOT NULL, key TEXT NOT NULL, "
        "value TEXT, PRIMARY KEY (run_id, key))"
    )


def _run_id(ref: str) -> str | None:
    return ref.split("/", 1)[1] if ref.startswith("curation/") else None


def _rows(store: JsonReader, ref: str, oid: str, rec: dict[str, Any]) -> Iterator[Row]:
    run_id = _run_id(ref)
    if run_id is None:
        return
    got = rec.get("tags")
    tags: dict[str, Any] = got if isinstance(got, dict) else {}
    name, reason = rec.get("name"), rec.get("reason")
    yield (
        "curation",
        (
            ref,
            run_id,
            oid,
            name if isinstance(name, str) else None,
            json.dumps(tags, sort_keys=True),
            1 if rec.get("retracted") is True else 0,
            reason if isinstance(reason, str) else None,
        ),
    )
    for k, v in tags.items():
        yield "curated_tags", (run_id, str(k), str(v))


def _remove(db: Database, ref: str) -> None:
    run_id = _run_id(ref)
    if run_id is None:
        return
    db.execute("DELETE FROM curation WHERE ref=?", (ref,))
    db.execute("DELETE FROM curated_tags WHERE run_id=?", (run_id,))


CURATION_INDEXER = Indexer(kind="curation", tables=_tables, rows=_rows, remove=_remove)
register_indexer(CURATION_INDEXER)
