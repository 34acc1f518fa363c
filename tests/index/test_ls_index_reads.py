"""What ``ledger ls`` asks the index costs a page, not the number of runs: at 10^5 runs a query
that read every ``runs`` row was most of an ``ls`` after one more run (bench/bench_scale.py)."""

from __future__ import annotations

from ledger.index import Index
from ledger.run import find
from ledger.store import Store


def test_finding_replays_and_their_originals_reads_no_whole_table(store: Store) -> None:
    with Index(store) as index:
        index.sync()
        plan = index.query("EXPLAIN QUERY PLAN " + find._LINKED)
    details = [str(row["detail"]) for row in plan]
    assert not [d for d in details if d.startswith("SCAN")], details
    assert any("runs_replay_of" in d for d in details), details


def test_linked_runs_are_the_replays_and_what_they_replay(store: Store) -> None:
    with Index(store) as index:
        db = index.db
        for run_id, replay_of in (("a", None), ("b", "a"), ("c", "b"), ("d", None)):
            db.execute(
                "INSERT INTO runs (ref, run_id, replay_of) VALUES (?,?,?)",
                (f"runs/{run_id}", run_id, replay_of),
            )
        linked = sorted(r["run_id"] for r in index.query(find._LINKED))
    assert linked == ["a", "b", "c"]


def test_a_commit_to_the_index_waits_on_no_fsync(store: Store) -> None:
    """The index is rebuilt from the log, which is fsynced: WAL with synchronous=NORMAL keeps
    the file whole, and an ``ls`` that folds one new run does not wait on the disk."""
    with Index(store) as index:
        assert index.query("PRAGMA synchronous") == [{"synchronous": 1}]
        assert index.query("PRAGMA journal_mode") == [{"journal_mode": "wal"}]
