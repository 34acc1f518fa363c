"""A writer SIGKILLed between its log append (the commit point) and its ref files: gc keeps what
the log names, the next writer finishes the files, ``repair_refs`` (``ledger reindex``)
repairs them from the whole log, and neither ever takes a move the fold refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger._canonical import format_datetime
from ledger.errors import UsageError
from ledger.store import Store
from ledger.store.fold import Fold
from ledger.store.gc import collect_garbage
from ledger.store.safe_read import NotRegularError
from ledger.store.verify import verify_store

ROOT = Path(__file__).resolve().parents[1]
# Moves two refs together, as a checkpoint save does, and dies right after the log append.
KILLED = """
import os, signal, sys
from ledger.store import Store
store = Store.open(sys.argv[1])
a = store.put_json({"kind": "note", "schema": 1, "n": "a"})
b = store.put_json({"kind": "note", "schema": 1, "n": "b"})
store.set_refs(
    [("notes/a", a, "set", {}), ("notes/b", b, "set", {})],
    after_log=lambda: os.kill(os.getpid(), signal.SIGKILL),
)
"""


def _killed_writer(store: Store) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", KILLED, str(store.root)], env=env, timeout=120)
    assert r.returncode == -9
    logged = {e.data["ref"]: e.data["new"] for e in store.log.entries()}
    assert set(logged) >= {"notes/a", "notes/b"}
    assert store.refs.get("notes/a") is None and store.refs.get("notes/b") is None
    return {k: logged[k] for k in ("notes/a", "notes/b")}


def _age_everything(store: Store) -> None:
    old = datetime.now(UTC).timestamp() - 48 * 3600
    for oid in store.objects:
        os.utime(store.objects.path_of(oid), (old, old))


def test_gc_keeps_what_the_log_names_and_repair_refs_writes_the_files(store: Store) -> None:
    logged = _killed_writer(store)
    _age_everything(store)
    problems = verify_store(store).problems
    assert [(p.kind, p.subject) for p in problems] == [
        ("ref-mismatch", "notes/a"),
        ("ref-mismatch", "notes/b"),
    ]
    assert all("`ledger reindex` repairs it" in p.message for p in problems)
    report = collect_garbage(store, delete=True, grace_seconds=0)
    assert report.deleted == [] and all(store.objects.has(o) for o in logged.values())
    fixed = store.repair_refs()
    assert fixed.repaired == ["notes/a", "notes/b"] and fixed.left == []
    assert {n: store.refs.get(n) for n in logged} == logged
    assert verify_store(store).ok


@pytest.mark.parametrize("writer", ["set_ref", "set_refs", "create_ref", "delete_ref"])
def test_the_next_writer_finishes_the_ref_files_first(store: Store, writer: str) -> None:
    logged = _killed_writer(store)
    c = store.put_json({"kind": "note", "schema": 1, "n": "c"})
    if writer == "set_ref":
        store.set_ref("notes/c", c)
    elif writer == "set_refs":
        store.set_refs([("notes/c", c, "set", {})])
    elif writer == "create_ref":
        assert store.create_ref("notes/c", c, op="set") is None
    else:  # a delete of a ref that is not there still finishes the cut writes first
        assert store.delete_ref("notes/c") is None
    assert {n: store.refs.get(n) for n in logged} == logged
    assert verify_store(store).ok
    # A move of a ref the killed writer set starts from what the log holds: no line refused.
    store.set_ref("notes/a", store.put_json({"kind": "note", "schema": 1, "n": "a2"}))
    assert verify_store(store).ok


def test_the_next_writer_finishes_a_cut_delete_by_removing_the_file(store: Store) -> None:
    """A delete killed after its log append (the commit point) leaves the ref file behind:
    the next writer removes it, as the log says, before its own move."""
    a = store.put_json({"kind": "note", "schema": 1, "n": "a"})
    store.set_ref("notes/a", a)
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="delete", ref="notes/a", old=a, new=None, time=now)
    assert store.refs.path_of("notes/a").exists()  # what the killed delete left
    store.set_ref("notes/b", store.put_json({"kind": "note", "schema": 1, "n": "b"}))
    assert not store.refs.path_of("notes/a").exists() and store.refs.get("notes/a") is None
    assert verify_store(store).ok


def test_a_cut_tag_of_a_curation_whose_record_is_damaged_is_finished(store: Store) -> None:
    """A curation ref's state is told from its record (retracted or not): one whose record is
    no JSON counts as a plain curation, so a tag cut after its log append is still finished
    by the next writer, not left behind as a move from nowhere."""
    damaged = store.objects.put_bytes(b"not json")
    store.set_ref("curation/r1", damaged, op="tag")
    for i in range(20):  # its own line leaves the tail the next writer reads
        store.set_ref(f"notes/n{i}", store.put_json({"kind": "note", "schema": 1, "n": i}))
    tagged = store.put_json({"kind": "curation", "schema": 1, "tags": ["good"]})
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="tag", ref="curation/r1", old=damaged, new=tagged, time=now)
    store.set_ref("notes/x", store.put_json({"kind": "note", "schema": 1, "n": "x"}))
    assert store.refs.get("curation/r1") == tagged


def test_a_cut_move_of_a_nested_ref_makes_its_folders(store: Store) -> None:
    """The first move of ``notes/deep/a`` cut after its log append, in a ledger with no
    ``refs/notes`` yet: the next writer makes both folders to finish it."""
    a = store.put_json({"kind": "note", "schema": 1, "n": "a"})
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="set", ref="notes/deep/a", old=None, new=a, time=now)
    assert not (store.root / "refs" / "notes").exists()
    store.set_ref("other/x", store.put_json({"kind": "note", "schema": 1, "n": "x"}))
    assert store.refs.get("notes/deep/a") == a
    assert verify_store(store).ok


def test_a_refused_line_is_never_finished_nor_repaired(store: Store) -> None:
    """A forged second seal appended without its ref file: the next writer and repair_refs leave
    the file at the first seal, which is what the fold says."""
    first = store.put_json({"kind": "run", "schema": 1, "run_id": "r", "status": "succeeded"})
    store.set_ref("runs/r", first, op="seal", status="succeeded")
    forged = store.put_json({"kind": "run", "schema": 1, "run_id": "r", "status": "failed"})
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="seal", ref="runs/r", old=first, new=forged, time=now, status="failed")
    before = store.refs.path_of("runs/r").stat().st_ino
    store.set_ref("notes/x", forged)
    assert store.refs.get("runs/r") == first
    assert store.refs.path_of("runs/r").stat().st_ino == before  # not even rewritten
    assert store.repair_refs().repaired == []
    assert store.refs.get("runs/r") == first
    assert [p.kind for p in verify_store(store).problems] == ["transition"]


def test_a_cut_move_after_a_refused_line_of_the_same_ref_is_finished(store: Store) -> None:
    """The fold skips a refused line and goes on: a later line of the same ref whose ``old`` is
    what the ref holds is applied. A forged ``seal`` of a note (refused: a note is only set or
    deleted), then a set cut after its log append: the next writer finishes the set, as the fold
    says, so its own move of that ref starts from the log's value and is not refused."""
    a = store.put_json({"kind": "note", "schema": 1, "n": "a"})
    store.set_ref("notes/a", a)
    forged = store.put_json({"kind": "note", "schema": 1, "n": "forged"})
    b = store.put_json({"kind": "note", "schema": 1, "n": "b"})
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="seal", ref="notes/a", old=a, new=forged, time=now)
    store.log.append(op="set", ref="notes/a", old=a, new=b, time=now)  # its file write was cut
    store.set_ref("notes/x", store.put_json({"kind": "note", "schema": 1, "n": "x"}))
    assert store.refs.get("notes/a") == b
    store.set_ref("notes/a", store.put_json({"kind": "note", "schema": 1, "n": "a2"}))
    assert [p.kind for p in verify_store(store).problems] == ["transition"]  # the forged seal
    assert store.repair_refs().repaired == []


def test_repair_leaves_a_ref_file_no_log_line_made(store: Store) -> None:
    oid = store.put_json({"kind": "note", "schema": 1})
    stray = store.refs.path_of("notes/stray")
    stray.parent.mkdir(parents=True)
    stray.write_text(oid + "\n")
    fixed = store.repair_refs()
    assert fixed.repaired == [] and fixed.left == ["notes/stray"]
    assert stray.read_text() == oid + "\n"
    (p,) = verify_store(store).problems
    assert p.kind == "ref-mismatch" and "it is not repaired" in p.message


def test_repair_judges_each_ref_file_from_one_read(store: Store) -> None:
    """``repair_refs`` reads each ref file once and judges its text as ``refs.get`` does: a
    damaged file the log names is written again; a file at a name no ref may have (the fold
    refuses every line naming it) is left as it is, whatever it holds; a FIFO is refused by
    name, never waited on."""
    oid = store.put_json({"kind": "note", "schema": 1})
    store.set_ref("notes/kept", oid)
    store.refs.path_of("notes/kept").chmod(0o644)
    store.refs.path_of("notes/kept").write_text("b3:not-an-id\n")
    odd = store.refs.root / "notes" / "has space"
    odd.write_text(oid + "\n")
    fixed = store.repair_refs()
    assert fixed.repaired == ["notes/kept"] and fixed.left == ["notes/has space"]
    assert store.refs.get("notes/kept") == oid
    assert odd.read_text() == oid + "\n"
    fifo = store.refs.root / "notes" / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularError, match="fifo is a FIFO"):
        store.repair_refs()


def _fold_so_far(store: Store) -> tuple[Fold, tuple[int, str] | None]:
    """The fold of the log as it is now, and its last line (offset, hash), as a rebuild of the
    index leaves them."""
    fold, last = Fold(), None
    for at, entry in store.log.entries_from(0):
        fold.apply(entry.data)
        last = (at, entry.hash)
    return fold, last


def test_repair_from_a_fold_taken_earlier_folds_the_lines_after_it(store: Store) -> None:
    """``ledger reindex`` repairs from the fold it took for the index: the lines written after
    it (a writer killed before its ref files, a ref moved since) are folded under the lock, so
    the files end as a fold of the whole log would leave them, and a newer ref is not undone."""
    store.set_ref("notes/old", store.put_json({"kind": "note", "schema": 1, "n": "old"}))
    fold, last = _fold_so_far(store)
    moved = store.put_json({"kind": "note", "schema": 1, "n": "moved"})
    store.set_ref("notes/old", moved)  # after the fold
    logged = _killed_writer(store)  # after it too: its two lines are not in the fold
    fixed = store.repair_refs(fold, last)
    assert fixed.repaired == ["notes/a", "notes/b"] and fixed.left == []
    assert {n: store.refs.get(n) for n in logged} == logged
    assert store.refs.get("notes/old") == moved
    assert verify_store(store).ok


def test_repair_from_a_fold_of_a_log_since_rewritten_folds_it_again(store: Store) -> None:
    """A fold whose last line is no longer where it was (the log cut or rewritten since) is
    not continued: the whole log is folded again."""
    store.set_ref("notes/x", store.put_json({"kind": "note", "schema": 1, "n": "x"}))
    fold, last = _fold_so_far(store)
    assert last is not None
    fold.refs.clear()  # what it says is wrong now; it must not be used
    logged = _killed_writer(store)
    for where in [(last[0], "b3:" + "0" * 64), (last[0] + 10**6, last[1])]:
        fixed = store.repair_refs(fold, where)
        assert fixed.left == [] and {n: store.refs.get(n) for n in logged} == logged
        assert store.refs.get("notes/x") is not None
    assert verify_store(store).ok


def test_reindex_reads_the_log_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index and the ref files are folded from one read of the log (it was read twice,
    once by each)."""
    from ledger.index import rebuild_index
    from ledger.store.log import HashLog

    _killed_writer(store)
    reads: list[int] = []
    real = HashLog.entries_from

    def counted(self: HashLog, at: int) -> Any:
        reads.append(at)
        return real(self, at)

    monkeypatch.setattr(HashLog, "entries_from", counted)
    done = rebuild_index(store, repair_refs=True)
    assert done.refs.repaired == ["notes/a", "notes/b"]
    assert reads.count(0) == 1, reads
    assert verify_store(store).ok


def _note(store: Store, n: str) -> str:
    return store.put_json({"kind": "note", "schema": 1, "n": n})


def test_repair_goes_on_past_refs_that_are_right_and_judges_each_case(store: Store) -> None:
    """Round 12: a ref that is right is skipped, not the end of the repair; a file the log
    deleted is removed; one no line made, or whose logged object is missing, is left."""
    store.set_ref("notes/0", _note(store, "0"))  # right: sorts first
    gone = _note(store, "gone")
    store.set_ref("notes/c", gone)
    logged = _killed_writer(store)  # notes/a and notes/b: files missing
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="delete", ref="notes/c", old=gone, new=None, time=now)  # file left
    (store.root / "refs" / "notes" / "junk").write_text("not an id\n")  # no line made it
    ghost = "b3:" + "e" * 64  # logged, never stored
    store.log.append(op="set", ref="notes/d", old=None, new=ghost, time=now)
    fixed = store.repair_refs()
    assert fixed.repaired == ["notes/a", "notes/b", "notes/c"]
    assert fixed.left == ["notes/d", "notes/junk"]
    assert {n: store.refs.get(n) for n in logged} == logged
    assert not store.refs.path_of("notes/c").exists() and store.refs.get("notes/d") is None


def test_repair_from_a_fold_of_no_line_folds_the_whole_log(store: Store) -> None:
    """A fold taken of an empty log (``last`` None): every line is folded into it."""
    logged = _killed_writer(store)
    fixed = store.repair_refs(Fold(), None)
    assert fixed.repaired == ["notes/a", "notes/b"]
    assert {n: store.refs.get(n) for n in logged} == logged


@pytest.mark.parametrize("forged", ["0", "f"])
def test_a_last_line_whose_hash_differs_either_way_refolds(store: Store, forged: str) -> None:
    """``last`` names a line by offset and hash: one whose hash is not the line's there (lower
    or higher) means the log is not the one ``fold`` was taken of: folded anew."""
    logged = _killed_writer(store)
    fixed = store.repair_refs(Fold(), (0, "b3:" + forged * 64))
    assert fixed.repaired == ["notes/a", "notes/b"]
    assert {n: store.refs.get(n) for n in logged} == logged


def test_a_damaged_ref_file_does_not_stop_the_next_writer_finishing_others(
    store: Store,
) -> None:
    """The killed writer's first ref file holds junk (verify reports it): the next writer
    skips it and still finishes the second."""
    logged = _killed_writer(store)
    path = store.refs.path_of("notes/a")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff" * 4000)
    store.set_ref("other/x", _note(store, "x"))
    assert store.refs.get("notes/b") == logged["notes/b"]


def test_a_run_whose_record_is_damaged_counts_as_sealed(store: Store) -> None:
    """A run ref's state is told from its record: one that cannot be read counts as sealed
    (never changed), not as absent, so no writer seals it again."""
    damaged = store.objects.put_bytes(b"not json")
    store.set_ref("runs/r1", damaged, op="seal")
    other = store.put_json({"kind": "run", "schema": 1, "status": "failed"})
    with pytest.raises(UsageError, match="sealed once"):
        store.set_ref("runs/r1", other, op="seal")
    assert store.refs.get("runs/r1") == damaged
