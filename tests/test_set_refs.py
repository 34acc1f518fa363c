"""``Store.set_refs``: several refs moved with one log append (their commit point), their files
replaced in order, each folder fsynced once (a checkpoint's step ref and ``latest``)."""

from __future__ import annotations

import fcntl
import itertools
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import UsageError
from ledger.index.consistency import check_log_records
from ledger.store import Store
from ledger.store.verify import verify_store


def _objects(store: Store, n: int) -> list[str]:
    return [store.put_json({"kind": "note", "schema": 1, "i": i}) for i in range(n)]


def test_refs_move_in_order_with_chained_entries(store: Store) -> None:
    a, b, c = _objects(store, 3)
    store.set_ref("checkpoints/r/latest", a, op="publish", step=1)
    seen: list[tuple[str, str | None, str | None]] = []

    def after(name: str) -> None:  # each file is replaced before the next one
        seen.append(
            (name, store.refs.get("checkpoints/r/step-2"), store.refs.get("checkpoints/r/latest"))
        )

    entries = store.set_refs(
        [
            ("checkpoints/r/step-2", b, "checkpoint", {"step": 2}),
            ("checkpoints/r/latest", b, "publish", {"step": 2}),
        ],
        after_each=after,
    )
    assert seen == [("checkpoints/r/step-2", b, a), ("checkpoints/r/latest", b, b)]
    log = list(store.log.entries())
    assert [e.seq for e in log] == [0, 1, 2]
    assert [e.hash for e in entries] == [e.hash for e in log[1:]]
    for before, after_ in itertools.pairwise(log):
        assert after_.data["prev"] == before.hash
    assert [
        (e.data["op"], e.data["ref"], e.data["old"], e.data["new"], e.data["step"]) for e in log[1:]
    ] == [
        ("checkpoint", "checkpoints/r/step-2", None, b, 2),
        ("publish", "checkpoints/r/latest", a, b, 2),
    ]
    assert store.ref_state_from_log() == {"checkpoints/r/step-2": b, "checkpoints/r/latest": b}
    assert verify_store(store).ok
    store.set_ref("notes/x", c)  # appends chain on after a batch
    assert list(store.log.entries())[-1].data["prev"] == log[-1].hash


def test_one_log_fsync_and_one_folder_fsync_for_all(store: Store, monkeypatch: Any) -> None:
    a, b = _objects(store, 2)
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store.set_refs(
        [
            ("checkpoints/r/step-1", a, "checkpoint", {"step": 1}),
            ("checkpoints/r/latest", a, "publish", {"step": 1}),
        ]
    )
    folder = str(store.refs.path_of("checkpoints/r/latest").parent)
    assert synced.count(str(store.log.path)) == 1
    assert synced.count(folder) == 1
    assert len(synced) == 4  # and each ref's temp file, before its rename
    synced.clear()
    store.set_ref("checkpoints/r/step-2", b, op="checkpoint")
    store.set_ref("checkpoints/r/latest", b, op="publish")
    assert synced.count(str(store.log.path)) == 2  # what it saves
    assert synced.count(folder) == 2


@pytest.mark.parametrize("bad", ["missing-object", "bad-name"])
def test_nothing_moves_when_one_move_is_refused(store: Store, bad: str) -> None:
    (a,) = _objects(store, 1)
    second = ("notes/../x", a) if bad == "bad-name" else ("notes/y", "b3:" + "0" * 64)
    before = store.log.path.read_bytes() if store.log.path.exists() else b""
    with pytest.raises(UsageError):
        store.set_refs([("notes/x", a, "set", {}), (*second, "set", {})])
    after = store.log.path.read_bytes() if store.log.path.exists() else b""
    assert after == before
    assert store.refs.get("notes/x") is None


def test_a_torn_second_entry_leaves_the_first_committed(store: Store, tmp_path: Path) -> None:
    """A crash in the middle of the one write: the entries written whole are committed, the
    torn one was never (cut by the next append); the refs lag the log, which verify reports."""
    a, b = _objects(store, 2)
    store.set_refs([("notes/x", a, "set", {}), ("notes/y", b, "set", {})])
    data = store.log.path.read_bytes()
    store.log.path.write_bytes(data[: len(data) - 10])  # the second line torn
    store.refs.path_of("notes/x").unlink()
    store.refs.path_of("notes/y").unlink()
    assert store.ref_state_from_log() == {"notes/x": a}
    kinds = {p.kind for p in verify_store(store).problems}
    assert "ref-mismatch" in kinds
    store.set_ref("notes/z", b)
    assert [e.data["ref"] for e in store.log.entries()] == ["notes/x", "notes/z"]


def test_a_ref_moved_twice_in_one_call_logs_each_move_from_the_one_before(store: Store) -> None:
    """The second move's ``old`` is the first move's object, as two ``set_ref`` calls log it:
    an ``old`` read from the ref file before the batch is a line the log check refuses."""
    a, b, c = _objects(store, 3)
    store.set_ref("tags/x", a)
    entries = store.set_refs([("tags/x", b, "set", {}), ("tags/x", c, "set", {})])
    assert [(e.data["old"], e.data["new"]) for e in entries] == [(a, b), (b, c)]
    assert store.refs.get("tags/x") == c
    assert verify_store(store).ok
    assert check_log_records(store) == []


@pytest.mark.parametrize("key", ["op", "ref", "old", "new", "time", "seq", "prev"])
def test_a_note_cannot_overwrite_the_entry_s_own_fields(store: Store, key: str) -> None:
    """A note holding op, ref, old, new or time logged a change other than the one made (the
    note won), one holding seq or prev was silently dropped (the log sets them): refused before
    anything is written, as ``set_ref`` refuses the first five (a keyword given twice)."""
    a, b = _objects(store, 2)
    before = store.log.path.read_bytes() if store.log.path.exists() else b""
    with pytest.raises(UsageError, match=key):
        store.set_refs([("tags/x", a, "set", {}), ("tags/y", a, "set", {key: b})])
    after = store.log.path.read_bytes() if store.log.path.exists() else b""
    assert after == before
    assert store.refs.get("tags/x") is None


def test_no_moves_change_nothing(store: Store) -> None:
    (a,) = _objects(store, 1)
    store.set_ref("tags/x", a)
    before = store.log.path.read_bytes()
    assert store.set_refs([]) == []
    assert store.log.path.read_bytes() == before


def test_ref_files_are_made_durable_while_the_log_append_is(store: Store, monkeypatch: Any) -> None:
    """The ref files' temp copies are written and fsynced beside the log append's fsync, not
    after it (a checkpoint's publish: three fsyncs in a row became two); renamed in order
    only once the append is durable."""
    a, b = _objects(store, 2)
    store.set_ref("checkpoints/r/latest", a, op="publish", step=1)
    refs_synced = threading.Semaphore(0)
    seen_at_log: list[bool] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path == str(store.log.path):  # the commit point waits for both ref temp files
            seen_at_log.append(
                all(refs_synced.acquire(timeout=30) for _ in range(2))  # generous deadline
            )
            assert store.refs.get("checkpoints/r/latest") == a  # nothing renamed yet
        real(fd)
        if Path(path).parent == store.tmp_dir:
            refs_synced.release()

    monkeypatch.setattr(os, "fsync", fsync)
    store.set_refs(
        [
            ("checkpoints/r/step-2", b, "checkpoint", {"step": 2}),
            ("checkpoints/r/latest", b, "publish", {"step": 2}),
        ]
    )
    assert seen_at_log == [True]
    assert store.refs.get("checkpoints/r/step-2") == b
    assert store.refs.get("checkpoints/r/latest") == b
    assert not [p for p in store.tmp_dir.iterdir() if p.name.startswith(".w-")]


def test_a_failed_log_append_leaves_no_ref_temp_file(store: Store, monkeypatch: Any) -> None:
    a, b = _objects(store, 2)
    store.set_ref("checkpoints/r/latest", a, op="publish", step=1)

    def broken(entries: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.log, "append_many", broken)
    with pytest.raises(OSError, match="No space"):
        store.set_refs([("checkpoints/r/latest", b, "publish", {"step": 2})])
    assert store.refs.get("checkpoints/r/latest") == a
    assert not [p for p in store.tmp_dir.iterdir() if p.name.startswith(".w-")]


def _temps(store: Store) -> list[str]:
    return sorted(p.name for p in store.tmp_dir.iterdir() if p.name.startswith(".w-"))


def test_a_staged_ref_copy_is_used_and_nothing_is_written_during_the_append(
    store: Store, monkeypatch: Any
) -> None:
    """``stage_ref`` writes and fsyncs the ref file's temp copy at once; ``set_refs`` given it
    renames that very file into place after the log append, and writes no copy of its own
    (a checkpoint stages its refs beside its record, off the way to the log append)."""
    import ledger.store.repo as repo

    a, b = _objects(store, 2)
    step = store.stage_ref("checkpoints/r/step-2", b)
    latest = store.stage_ref("checkpoints/r/latest", b)
    step.wait()
    latest.wait()
    staged = _temps(store)
    assert len(staged) == 2
    assert store.refs.get("checkpoints/r/latest") is None  # nothing moved yet
    written: list[bytes] = []
    stage = repo.stage_bytes

    def spy(data: bytes, *args: Any, **kw: Any) -> Any:
        written.append(data)
        return stage(data, *args, **kw)

    monkeypatch.setattr(repo, "stage_bytes", spy)
    inodes = {name: os.stat(store.tmp_dir / name).st_ino for name in staged}
    store.set_refs(
        [
            ("checkpoints/r/step-2", b, "checkpoint", {"step": 2}),
            ("checkpoints/r/latest", b, "publish", {"step": 2}),
        ],
        staged=[latest, step],  # any order: matched by ref and object
    )
    assert written == []
    assert sorted(
        os.stat(store.refs.path_of(n)).st_ino
        for n in ("checkpoints/r/step-2", "checkpoints/r/latest")
    ) == sorted(inodes.values())
    assert store.refs.get("checkpoints/r/latest") == b
    assert _temps(store) == []
    assert verify_store(store).ok
    del a


def test_a_staged_copy_that_matches_no_move_is_removed_and_never_used(
    store: Store, monkeypatch: Any
) -> None:
    """A copy for another object (the record was written anew), or another ref, is not
    renamed into place: ``set_refs`` writes its own and removes the caller's, also when it
    refuses the moves."""
    a, b = _objects(store, 2)
    stale = store.stage_ref("checkpoints/r/latest", a)
    other = store.stage_ref("checkpoints/r/step-9", b)
    store.set_refs([("checkpoints/r/latest", b, "publish", {"step": 2})], staged=[stale, other])
    assert store.refs.get("checkpoints/r/latest") == b
    assert store.refs.get("checkpoints/r/step-9") is None
    assert _temps(store) == []
    refused = store.stage_ref("checkpoints/r/latest", a)
    with pytest.raises(UsageError):
        store.set_refs([("../x", a, "set", {})], staged=[refused])
    assert _temps(store) == []
    assert store.refs.get("checkpoints/r/latest") == b


def test_before_append_runs_under_the_lock_before_the_append(store: Store) -> None:
    # A checkpoint's record is made durable on other threads meanwhile: set_refs waits for it
    # (before_append) after taking the lock and before the append that names the record.
    (a,) = _objects(store, 1)
    seen: list[tuple[bool, int]] = []
    lock = store.root / "locks" / "refs.lock"

    def before() -> None:
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = False
        except BlockingIOError:
            held = True
        finally:
            os.close(fd)
        seen.append((held, len(list(store.log.entries()))))

    store.set_refs([("notes/x", a, "set", {})], before_append=before)
    assert seen == [(True, 0)] and store.refs.get("notes/x") == a

    # One that raises leaves nothing written: no log line, no ref file.
    def fails() -> None:
        raise OSError("the record's folder could not be made durable")

    (b,) = _objects(store, 1)
    with pytest.raises(OSError, match="could not be made durable"):
        store.set_refs([("notes/y", b, "set", {})], before_append=fails)
    assert store.refs.get("notes/y") is None and len(list(store.log.entries())) == 1


def test_a_ref_copy_that_cannot_be_written_raises_its_own_error(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ref file's temp copy is written on a kept thread; its error (a full disk here) is
    # raised by set_refs as it was, after the log append (the commit point, which
    # repair_refs or the next writer completes).
    import ledger.store.repo as repo

    (a,) = _objects(store, 1)

    def full(data: bytes, tmp_dir: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(repo, "stage_bytes", full)
    with pytest.raises(OSError, match="No space left on device"):
        store.set_refs([("notes/x", a, "set", {})])
    monkeypatch.undo()
    assert store.refs.get("notes/x") is None
    assert store.repair_refs().repaired == ["notes/x"] and store.refs.get("notes/x") == a
