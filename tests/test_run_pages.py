"""Listing and finding runs a page at a time gives what reading every run gave, with the same
warnings when the index was edited."""

from __future__ import annotations

import sqlite3

import pytest

from ledger.index import Index
from ledger.index.checked import checked_runs, newest_runs
from ledger.index.short_ids import short_ids, short_ids_of
from ledger.run.find import _refs_below, _rows_between, resolve_run
from ledger.store import Store


def _runs(store: Store, n: int) -> list[str]:
    ids = []
    for i in range(n):
        run_id = f"20260101T0000{i:02d}.000000Z-{(i * 2654435761) % 2**32:08x}"
        rec = {
            "kind": "run",
            "schema": 1,
            "run_id": run_id,
            "name": f"n{i % 3}",
            "status": "succeeded",
            "tags": {},
            "replay_of": None,
        }
        if store.refs.get(f"runs/{run_id}") is None:  # a sealed run is never sealed again
            store.set_ref(f"runs/{run_id}", store.put_json(rec), op="seal")
        ids.append(run_id)
    return ids


def _edit(store: Store, sql: str) -> None:
    db = sqlite3.connect(store.root / "index.sqlite")
    db.execute(sql)
    db.commit()
    db.close()


EDITS = [
    None,
    "DELETE FROM runs WHERE name = 'n1'",
    "UPDATE runs SET status = 'failed' WHERE name = 'n2'",
    "INSERT INTO runs (ref, run_id, status) VALUES ('runs/20260101T000005.5Z-x', 'x', 'ok')",
    "INSERT INTO runs (ref, run_id, status) VALUES ('runs/zzz', 'zzz', 'ok')",
]


@pytest.mark.parametrize("edit", EDITS)
def test_page_walk_equals_the_whole_walk(store: Store, edit: str | None) -> None:
    _runs(store, 11)
    with Index(store) as index:
        index.sync()
    if edit:
        _edit(store, edit)
    with Index(store) as index:
        whole_notes: list[str] = []
        whole = list(checked_runs(store, index.query("SELECT * FROM runs"), whole_notes))
        for chunk in (1, 3, 4, 11, 50):
            notes: list[str] = []
            pages = list(
                newest_runs(
                    store,
                    lambda hi, n: _refs_below(index, hi, n),
                    lambda lo, hi: _rows_between(index, lo, hi),
                    notes,
                    chunk=chunk,
                )
            )
            assert pages == whole
            assert notes == whole_notes
    assert bool(whole_notes) == bool(edit)


def test_names_resolve_through_the_index_and_are_confirmed_on_the_record(store: Store) -> None:
    ids = _runs(store, 7)
    assert resolve_run(store, "n1") == ids[4]  # the newest run named n1
    assert resolve_run(store, ids[2]) == ids[2]
    assert resolve_run(store, ids[3][:17]) == ids[3]  # a unique prefix
    # An index that names another run n1 does not make it n1: its record says n0.
    _edit(store, f"UPDATE runs SET name = 'n1' WHERE run_id = '{ids[6]}'")
    assert resolve_run(store, "n1") == ids[4]


def test_short_ids_of_a_page_equal_those_of_every_run(store: Store) -> None:
    ids = _runs(store, 12)
    every = short_ids_of(store)
    assert every == short_ids(ids, avoid={"n0", "n1", "n2"})
    assert short_ids_of(store, ids[3:6]) == {i: every[i] for i in ids[3:6]}


def test_a_kept_listing_is_listed_again_once_the_folder_changes(store: Store) -> None:
    import os

    ids = _runs(store, 3)
    folder = store.refs.root / "runs"
    old = folder.stat().st_mtime - 10
    os.utime(folder, (old, old))  # changed long enough ago for its listing to be kept
    assert store.refs.names("runs/") == [f"runs/{i}" for i in ids]
    assert "runs/" in store.refs._listed
    more = _runs(store, 4)[3:]
    assert store.refs.names("runs/") == [f"runs/{i}" for i in ids + more]
    # Changed within the last second: not kept (a change in the same tick would be missed).
    store.refs._listed.clear()
    store.refs.names("runs/")
    assert "runs/" not in store.refs._listed
