"""``Index.sync`` reads only the log lines it has not folded, and folds everything again when the
log no longer continues the line it folded last."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from _support import run_ledger

from ledger.index import Index
from ledger.store import Store
from ledger.store.log import LogEntry


class _Counting(Index):
    """The real index; counts the log lines it reads and from where."""

    read: list[int]

    def _log_from(self, at: int) -> Iterator[tuple[int, LogEntry]]:
        self.read = getattr(self, "read", [])
        for pos, entry in super()._log_from(at):
            self.read.append(pos)
            yield pos, entry


def _put(store: Store, i: int, ref: str | None = None) -> None:
    oid = store.put_json({"kind": "note", "schema": 1, "i": i})
    store.set_ref(ref or f"notes/r{i % 7}", oid)


def _without_note(dump: dict[str, list[tuple[object, ...]]]) -> dict[str, list[tuple[object, ...]]]:
    """``dump`` less the meta row that remembers a rewrite (a fresh fold has none), which must
    be there."""
    notes = [row for row in dump["meta"] if row[0] == "log_rewritten"]
    assert len(notes) == 1, dump["meta"]
    return dump | {"meta": [row for row in dump["meta"] if row[0] != "log_rewritten"]}


def _fresh(store: Store) -> dict[str, list[tuple[object, ...]]]:
    """What a fold of the whole log gives, in a new index file."""
    path = store.root / "fresh.sqlite"
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with Index(store, conn=conn) as index:
            index.rebuild()
            return index.dump()
    finally:
        path.unlink()


def test_sync_reads_only_the_new_lines_and_equals_a_rebuild(store: Store) -> None:
    for i in range(20):
        _put(store, i)
    with _Counting(store) as index:
        assert index.sync() == 20
        assert len(index.read) == 20
        for i in range(20, 23):
            _put(store, i)
        store.delete_ref("notes/r2")
        index.read = []
        assert index.sync() == 4
        # The last folded line (to check it is still there) and the four new ones.
        assert len(set(index.read)) == 5 and min(index.read) > 0
        index.read = []
        assert index.sync() == 0 and len(index.read) == 1
        incremental = index.dump()
    assert incremental == _fresh(store)
    assert len(incremental["log"]) == 24


def test_an_index_without_a_remembered_position_folds_the_rest_once(store: Store) -> None:
    for i in range(10):
        _put(store, i)
    with Index(store) as index:
        index.sync()
        # As an index written before positions were remembered: only last_seq.
        index.db.execute("DELETE FROM meta WHERE key IN ('log_at', 'log_head')")
    for i in range(10, 14):
        _put(store, i)
    with _Counting(store) as index:
        assert index.sync() == 14  # every line read once, the 4 new ones applied
        assert index.dump() == _fresh(store)
        index.read = []
        index.sync()
        assert len(index.read) == 1


def _rewrite_tail(store: Store, keep: int) -> None:
    """Cut the log after ``keep`` lines; the ref files are left as they were."""
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    store.log.path.write_bytes(b"".join(lines[:keep]))


def test_a_rewritten_log_is_folded_again_from_the_start(store: Store) -> None:
    for i in range(12):
        _put(store, i)
    with _Counting(store) as index:
        index.sync()
        # History after line 8 replaced by other entries: the line folded last is gone.
        _rewrite_tail(store, 8)
        _put(store, 100, "notes/other")
        _put(store, 101, "notes/other2")
        index.read = []
        index.sync()
        assert 0 in index.read  # read again from the start
        dump = _without_note(index.dump())
        assert dump == _fresh(store)
        # Without the full fold, the cut entries 10 and 11 would still be rows.
        assert [row[0] for row in sorted(dump["log"])] == list(range(10))
        names = {r["name"] for r in index.query("SELECT name FROM refs")}
        assert {"notes/other", "notes/other2"} <= names


def test_a_log_longer_than_before_but_rewritten_is_folded_again(store: Store) -> None:
    for i in range(6):
        _put(store, i)
    with Index(store) as index:
        index.sync()
    # Same length up to the folded head, but the head line itself was edited.
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"op":"set"', b'"op":"sex"')
    store.log.path.write_bytes(b"".join(lines))
    for i in range(6, 9):
        _put(store, i)
    with _Counting(store) as index:
        index.sync()
        assert 0 in index.read
        assert _without_note(index.dump()) == _fresh(store)
        ops = {r["op"] for r in index.query("SELECT op FROM log")}
        assert "sex" in ops


def test_a_line_inserted_after_the_folded_head_forces_a_full_fold(store: Store) -> None:
    for i in range(6):
        _put(store, i)
    with Index(store) as index:
        index.sync()
    _put(store, 6)
    # A forged line whose prev does not point at the line folded last, put right after it.
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    forged = lines[-1].replace(b'"prev":"b3:', b'"prev":"b3:0')
    store.log.path.write_bytes(b"".join([*lines[:-1], forged, lines[-1]]))
    with _Counting(store) as index:
        index.sync()
        assert 0 in index.read
        assert _without_note(index.dump()) == _fresh(store)


def test_verify_still_reports_an_edited_log_after_incremental_syncs(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    for i in range(8):
        _put(store, i)
    assert run_ledger("ls", cwd=tmp_path).returncode == 0  # the index has folded the log
    # An early line edited in place: the folded head is untouched, the chain is not.
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"op":"set"', b'"op":"del"')
    store.log.path.write_bytes(b"".join(lines))
    _put(store, 8)
    assert run_ledger("ls", cwd=tmp_path).returncode == 0
    r = run_ledger("verify", cwd=tmp_path)
    assert r.returncode != 0
    assert "log chain broken" in r.stdout + r.stderr


def test_verify_reports_a_rewritten_head_after_the_index_caught_up(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    for i in range(5):
        _put(store, i)
    assert run_ledger("ls", cwd=tmp_path).returncode == 0
    # The last line edited: no later line points at it, so the chain alone cannot tell.
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"time":"2', b'"time":"3')
    store.log.path.write_bytes(b"".join(lines))
    _put(store, 5)
    assert run_ledger("ls", cwd=tmp_path).returncode == 0  # folds the log again
    r = run_ledger("verify", cwd=tmp_path)
    assert r.returncode != 0
    assert "no longer holds the line the index had folded last" in r.stdout + r.stderr
    # `ledger reindex` accepts the log as it is now; the note goes with the old index.
    assert run_ledger("reindex", cwd=tmp_path).returncode == 0
    with Index(store) as index:
        assert index.query("SELECT * FROM meta WHERE key='log_rewritten'") == []
