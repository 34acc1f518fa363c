"""``ledger show`` finds a run's checks, gates and verdicts through the index (``checks`` and
``verdict_runs`` tables), reading only that run's records, not every check in the ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ledger._canonical import format_datetime
from ledger.index import Index
from ledger.run.linked import linked_checks
from ledger.store import Store


def _forge(store: Store, ref: str, op: str, new: str | None) -> None:
    """A chained line the fold refuses (``Store`` refuses to write one), and the ref file moved
    to match, as an attacker would."""
    now = format_datetime(datetime.now(UTC))
    store.log.append(op=op, ref=ref, old=store.refs.get(ref), new=new, time=now)
    path = store.refs.path_of(ref)
    if new is None:
        path.unlink()
    else:
        path.write_text(new + "\n")


def _check(
    store: Store, ref: str, kind: str, run_id: str | None, created: str, forged: bool = False
) -> str:
    rec: dict[str, Any] = {"kind": kind, "schema": 1, "created": created, "passed": True}
    rec["items"] = [{"level": "l1", "name": "grad", "required": True, "passed": False}]
    if run_id is not None:
        rec["run_id"] = run_id
    oid = store.put_json(rec)
    if forged:
        _forge(store, ref, kind, oid)
    else:
        store.set_ref(ref, oid, op=kind)
    return oid


def _verdict(store: Store, original: str, replays: list[str]) -> str:
    rec = {"kind": "verdict", "schema": 1, "original": original, "replays": replays}
    rec |= {"mode": "bitwise", "outcome": "reproduced", "created": "2026-01-01T00:00:00Z"}
    oid = store.put_json(rec)
    store.set_ref(f"verdicts/{original}/{replays[0]}", oid, op="verdict")
    return oid


def test_only_the_runs_own_checks_are_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _check(store, "checks/c2", "check", "A", "2026-01-02T00:00:00Z")
    gate = _check(store, "gates/g1", "gate", "A", "2026-01-01T00:00:00Z")
    others = [_check(store, f"checks/o{i}", "check", "B", "2026-01-03T00:00:00Z") for i in range(5)]
    others.append(_check(store, "checks/none", "check", None, "2026-01-03T00:00:00Z"))
    read: list[str] = []
    real = store.get_json

    def counted(oid: str) -> Any:
        read.append(oid)
        return real(oid)

    with Index(store) as index:
        index.sync()
        monkeypatch.setattr(store, "get_json", counted)
        got = linked_checks(store, "A", index)
    assert [(c["kind"], c["id"], c["oid"]) for c in got] == [
        ("gate", "g1", gate),
        ("check", "c2", mine),
    ]  # oldest first
    assert got[0]["failed"] == ["l1/grad"]
    assert sorted(read) == sorted([mine, gate]), "records of other runs were read"
    assert not set(read) & set(others)


def test_the_record_decides_over_the_index(store: Store) -> None:
    """A ref moved to a record about another run, and an index row that says otherwise: the
    record, read through the ref, is what counts."""
    _check(store, "checks/c1", "check", "A", "2026-01-01T00:00:00Z")
    with Index(store) as index:
        index.sync()
        moved = store.put_json({"kind": "check", "schema": 1, "run_id": "B", "items": []})
        # The ref file changes without a log line: the index still says run A.
        store.refs.path_of("checks/c1").write_text(moved + "\n")
        assert linked_checks(store, "A", index) == []


def test_a_verdict_is_found_by_each_run_it_is_about(store: Store) -> None:
    v1 = _verdict(store, "A", ["R1", "R2"])
    v2 = _verdict(store, "B", ["R3"])
    with Index(store) as index:
        index.sync()
        q = "SELECT ref FROM verdict_runs WHERE run_id = ? ORDER BY ref"
        assert [r["ref"] for r in index.query(q, ("A",))] == ["verdicts/A/R1"]
        assert [r["ref"] for r in index.query(q, ("R2",))] == ["verdicts/A/R1"]
        assert [r["ref"] for r in index.query(q, ("R3",))] == ["verdicts/B/R3"]
        # A verdict is never deleted (docs/format.md, "Transitions"): the line is refused.
        _forge(store, "verdicts/A/R1", "delete", None)
        index.sync()
        assert [r["ref"] for r in index.query(q, ("R2",))] == ["verdicts/A/R1"]
    assert v1 != v2


def test_rebuilt_lookup_tables_equal_incremental(store: Store) -> None:
    with Index(store) as index:
        _check(store, "checks/c1", "check", "A", "2026-01-01T00:00:00Z")
        index.sync()
        _check(store, "gates/g1", "gate", "B", "2026-01-01T00:00:00Z")
        _verdict(store, "A", ["R1"])
        index.sync()
        # A check never moves and a gate is never deleted: both lines are refused.
        _check(store, "checks/c1", "check", "C", "2026-01-02T00:00:00Z", forged=True)
        _forge(store, "gates/g1", "delete", None)
        index.sync()
        incremental = index.dump()
        assert incremental["checks"] == [("checks/c1", "A"), ("gates/g1", "B")]
        assert incremental["verdict_runs"] == [("verdicts/A/R1", "A"), ("verdicts/A/R1", "R1")]
        index.rebuild()
        assert index.dump() == incremental
