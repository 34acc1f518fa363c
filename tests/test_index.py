"""The SQLite index is derived: rebuilding it gives exactly what incremental updates gave."""

from __future__ import annotations

from multiprocessing import get_context

from ledger.index import Index
from ledger.store import Store


def test_rebuilt_index_equals_incremental(store: Store) -> None:
    index = Index(store)
    for i in range(30):
        oid = store.put_json({"kind": "note", "schema": 1, "i": i})
        store.set_ref(f"notes/r{i % 7}", oid)  # refs are overwritten too
        if i % 5 == 0:
            index.sync()
    store.delete_ref("notes/r3")
    index.sync()
    incremental = index.dump()
    assert incremental["refs"] and len(incremental["log"]) == 31
    index.rebuild()
    assert index.dump() == incremental
    index.close()
    # A fresh index file built from nothing agrees as well.
    (store.root / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (store.root / f"index.sqlite{suffix}").unlink(missing_ok=True)
    with Index(store) as fresh:
        fresh.sync()
        assert fresh.dump() == incremental


def _worker(root: str, w: int) -> int:
    store = Store.open(root)
    with Index(store) as index:
        for i in range(25):
            oid = store.put_json({"kind": "note", "schema": 1, "w": w, "i": i})
            store.set_ref(f"notes/w{w}-{i}", oid)
            index.sync()
    return w


def test_concurrent_writers_never_see_database_locked(store: Store) -> None:
    with get_context("spawn").Pool(4) as pool:
        assert sorted(pool.starmap(_worker, [(str(store.root), w) for w in range(4)])) == [
            0,
            1,
            2,
            3,
        ]
    with Index(store) as index:
        index.sync()
        assert len(index.query("SELECT * FROM refs")) == 100
        assert index.last_seq() == 99


def test_an_index_of_the_layout_before_refs_state_is_rebuilt(store: Store) -> None:
    """Version 4 had ``refs (name, oid)``: the first use folds the log into the new layout."""
    import sqlite3

    store.set_ref("notes/a", store.put_json({"kind": "note", "schema": 1}))
    with Index(store) as index:
        index.sync()
        want = index.dump()
    db = sqlite3.connect(store.root / "index.sqlite")
    db.execute("DROP TABLE refs")
    db.execute("CREATE TABLE refs (name TEXT PRIMARY KEY, oid TEXT NOT NULL)")
    db.execute("UPDATE meta SET value='4' WHERE key='version'")
    db.commit()
    db.close()
    with Index(store) as index:
        index.sync()
        assert index.dump() == want
