"""A writer SIGKILLed between its log append (the commit point) and its ref files: gc keeps what
the log names, the next writer finishes the files, ``repair_refs`` (``ledger reindex``)
repairs them from the whole log, and neither ever takes a move the fold refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger._canonical import format_datetime
from ledger.store import Store
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


def test_the_next_writer_finishes_the_ref_files_first(store: Store) -> None:
    logged = _killed_writer(store)
    store.set_ref("notes/c", store.put_json({"kind": "note", "schema": 1, "n": "c"}))
    assert {n: store.refs.get(n) for n in logged} == logged
    assert verify_store(store).ok
    # A move of a ref the killed writer set starts from what the log holds: no line refused.
    store.set_ref("notes/a", store.put_json({"kind": "note", "schema": 1, "n": "a2"}))
    assert verify_store(store).ok


def test_a_refused_line_is_never_finished_nor_repaired(store: Store) -> None:
    """A forged second seal appended without its ref file: the next writer and repair_refs leave
    the file at the first seal, which is what the fold says."""
    first = store.put_json({"kind": "run", "schema": 1, "run_id": "r", "status": "succeeded"})
    store.set_ref("runs/r", first, op="seal", status="succeeded")
    forged = store.put_json({"kind": "run", "schema": 1, "run_id": "r", "status": "failed"})
    now = format_datetime(datetime.now(UTC))
    store.log.append(op="seal", ref="runs/r", old=first, new=forged, time=now, status="failed")
    store.set_ref("notes/x", forged)
    assert store.refs.get("runs/r") == first
    assert store.repair_refs().repaired == []
    assert store.refs.get("runs/r") == first
    assert [p.kind for p in verify_store(store).problems] == ["transition"]


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
