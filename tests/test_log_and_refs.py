"""Refs and the hash-chained log: tampering is detected, crashes are survivable."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ledger.errors import UsageError
from ledger.store import Store
from ledger.store.verify import verify_store


def _populate(store: Store, n: int = 5) -> list[str]:
    oids = []
    for i in range(n):
        oid = store.put_json({"kind": "note", "schema": 1, "i": i})
        store.set_ref(f"notes/r{i}", oid)
        oids.append(oid)
    return oids


def test_set_ref_logs_and_chains(store: Store) -> None:
    oids = _populate(store)
    entries = list(store.log.entries())
    assert [e.seq for e in entries] == list(range(5))
    assert entries[0].data["prev"] is None
    for before, after in itertools.pairwise(entries):
        assert after.data["prev"] == before.hash
    assert store.refs.get("notes/r3") == oids[3]
    assert store.ref_state_from_log() == {f"notes/r{i}": o for i, o in enumerate(oids)}
    assert verify_store(store).ok


def _log_lines(store: Store) -> list[bytes]:
    return store.log.path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("edit", ["change", "delete", "swap"])
def test_editing_history_is_detected(store: Store, edit: str) -> None:
    _populate(store)
    lines = _log_lines(store)
    if edit == "change":
        entry = json.loads(lines[2])
        entry["time"] = "2000-01-01T00:00:00.000000Z"
        lines[2] = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    elif edit == "delete":
        del lines[1]
    else:
        lines[1], lines[2] = lines[2], lines[1]
    store.log.path.write_bytes(b"".join(lines))
    problems = verify_store(store).problems
    assert any(p.kind == "log-chain" for p in problems), problems


def test_ref_changed_behind_the_logs_back(store: Store) -> None:
    oids = _populate(store)
    # Point a ref at another existing record without going through set_ref.
    store.refs.path_of("notes/r0").write_text(oids[4] + "\n")
    problems = verify_store(store).problems
    assert [p.kind for p in problems] == ["ref-mismatch"]
    assert problems[0].subject == "notes/r0"


def test_editing_a_record_is_detected(store: Store) -> None:
    oids = _populate(store)
    path = store.objects.path_of(oids[2])
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b'"i":2', b'"i":7'))
    problems = verify_store(store).problems
    assert any(p.kind == "corrupt-object" and p.subject == oids[2] for p in problems)


def test_torn_log_tail_is_reported_then_dropped_by_the_next_append(store: Store) -> None:
    _populate(store, 2)
    with open(store.log.path, "ab") as f:
        f.write(b'{"seq":2,"op":"set"')  # a crash mid-append
    problems = verify_store(store).problems
    assert any("incomplete" in p.message for p in problems)
    oid = store.put_json({"kind": "note", "schema": 1, "i": 99})
    store.set_ref("notes/next", oid)
    assert verify_store(store).ok
    assert [e.seq for e in store.log.entries()] == [0, 1, 2]


def test_delete_ref(store: Store) -> None:
    _populate(store, 2)
    store.delete_ref("notes/r0")
    assert store.refs.get("notes/r0") is None
    assert verify_store(store).ok
    assert store.delete_ref("notes/never") is None


@pytest.mark.parametrize("name", ["", "../x", "notes/../x", "/abs", "notes//x", ".hidden", "a\\b"])
def test_bad_ref_names_are_refused(store: Store, name: str) -> None:
    oid = store.put_json({"kind": "note", "schema": 1})
    with pytest.raises(UsageError):
        store.set_ref(name, oid)


def test_ref_to_missing_object_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="no such object"):
        store.set_ref("notes/x", "b3:" + "0" * 64)


def test_dangling_link_inside_a_record_is_reported(store: Store, tmp_path: Path) -> None:
    blob = store.objects.put_bytes(b"data")
    rec = store.put_json({"kind": "note", "schema": 1, "data": blob})
    store.set_ref("notes/x", rec)
    store.objects.delete(blob)
    problems = verify_store(store).problems
    assert [(p.kind, p.subject) for p in problems] == [("missing-object", blob)]


def test_entries_from_an_offset_read_only_the_lines_after_it(store: Store) -> None:
    """How the index reads only the lines it has not folded: each entry comes with the byte
    offset where its line starts, and reading from one of those offsets yields that line and
    the rest, with the same offsets."""
    _populate(store, 4)
    lines = _log_lines(store)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    every = list(store.log.entries_from(0))
    assert [at for at, _ in every] == starts
    assert [e.hash for _, e in every] == [e.hash for e in store.log.entries()]
    later = list(store.log.entries_from(starts[2]))
    assert [(at, e.seq) for at, e in later] == [(starts[2], 2), (starts[3], 3)]
    assert list(store.log.entries_from(store.log.path.stat().st_size)) == []
