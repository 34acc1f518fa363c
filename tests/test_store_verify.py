"""``verify_store`` itself: counts, progress, and one problem of each kind with its subject."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ledger.store import Store
from ledger.store.staging import open_staging, release_staging
from ledger.store.verify import verify_store

MISSING = "b3:" + "ab" * 32


def _runs(store: Store, n: int) -> list[str]:
    oids = []
    for i in range(n):
        oid = store.put_json({"kind": "note", "schema": 1, "i": i})
        store.set_ref(f"notes/r{i}", oid)
        oids.append(oid)
    return oids


def test_an_intact_store_counts_everything_and_reports_its_head(store: Store) -> None:
    _runs(store, 3)
    seen: list[int] = []
    report = verify_store(store, progress=seen.append)
    assert report.ok and report.problems == []
    assert (report.objects, report.refs, report.log_entries) == (3, 3, 3)
    assert seen == [1, 2, 3]
    assert report.head == store.log.head().hash  # type: ignore[union-attr]


def test_an_empty_store_has_no_head(store: Store) -> None:
    report = verify_store(store)
    assert report.ok
    assert (report.objects, report.refs, report.log_entries, report.head) == (0, 0, 0, None)


def test_a_corrupt_object_is_reported_by_its_id(store: Store) -> None:
    oids = _runs(store, 2)
    path = store.objects.path_of(oids[1])
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    os.chmod(path, 0o644)
    path.write_bytes(bytes(data))
    report = verify_store(store)
    assert [(p.kind, p.subject) for p in report.problems] == [("corrupt-object", oids[1])]
    assert report.objects == 2 and not report.ok


def test_a_ref_to_a_missing_object_and_a_missing_link_are_both_reported(store: Store) -> None:
    parent = store.put_json({"kind": "note", "schema": 1, "code": MISSING})
    store.set_ref("notes/linking", parent)
    gone = store.put_json({"kind": "note", "schema": 1, "gone": True})
    store.set_ref("notes/dangling", gone)
    store.objects.path_of(gone).unlink()
    problems = [(p.kind, p.subject, p.message) for p in verify_store(store).problems]
    assert (
        "missing-object",
        gone,
        f"ref notes/dangling points at {gone}, which is missing",
    ) in problems
    assert (
        "missing-object",
        MISSING,
        f"record {parent} links to {MISSING}, which is missing",
    ) in problems
    assert len(problems) == 2, problems


def test_a_content_link_to_absent_content_is_not_a_problem(store: Store) -> None:
    store.set_ref("notes/r", store.put_json({"kind": "note", "schema": 1, "digest": MISSING}))
    assert verify_store(store).ok


def test_a_ref_changed_behind_the_logs_back_is_a_mismatch(store: Store) -> None:
    oids = _runs(store, 2)
    store.refs.path_of("notes/r0").write_text(oids[1] + "\n")
    mismatch = [p for p in verify_store(store).problems if p.kind == "ref-mismatch"]
    assert [p.subject for p in mismatch] == ["notes/r0"]
    assert f"holds {oids[1]} but the log says {oids[0]}" in mismatch[0].message


def test_a_ref_deleted_or_added_behind_the_logs_back_is_a_mismatch(store: Store) -> None:
    oids = _runs(store, 1)
    store.refs.path_of("notes/r0").unlink()
    extra = store.refs.path_of("notes/extra")
    extra.write_text(oids[0] + "\n")
    problems = verify_store(store).problems
    assert [(p.kind, p.subject) for p in problems] == [
        ("ref-mismatch", "notes/extra"),
        ("ref-mismatch", "notes/r0"),
    ]
    assert "holds nothing but the log says" in problems[1].message
    assert "but the log says deleted" in problems[0].message


def test_a_chain_break_names_its_line_and_a_damaged_end(store: Store) -> None:
    _runs(store, 3)
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    store.log.path.write_bytes(lines[0] + lines[2])
    chain = [p.subject for p in verify_store(store).problems if p.kind == "log-chain"]
    assert chain and chain[0] == "log line 2"
    store.log.path.write_bytes(b"".join(lines)[:-1])  # the last line loses its newline
    chain = [p.subject for p in verify_store(store).problems if p.kind == "log-chain"]
    assert "end of log" in chain


def test_a_head_is_checked_only_when_given(store: Store) -> None:
    _runs(store, 2)
    head = verify_store(store).head
    assert head is not None
    assert verify_store(store, head=head).ok
    other = "b3:" + "cd" * 32
    report = verify_store(store, head=other)
    assert [(p.kind, p.subject) for p in report.problems] == [("head", other)]
    assert "is not in the log" in report.problems[0].message


def test_abandoned_staging_is_reported_and_a_live_one_is_not(store: Store) -> None:
    live = store.root / "staging" / "live-run"
    fd = open_staging(live)
    try:
        dead = store.root / "staging" / "dead-run"
        release_staging(dead, open_staging(dead), remove=False)
        (dead / "blob").write_bytes(b"x" * 10)
        report = verify_store(store)
        assert [(p.kind, p.subject) for p in report.problems] == [
            ("abandoned-staging", "staging/dead-run")
        ]
        assert "(10 bytes)" in report.problems[0].message
    finally:
        release_staging(live, fd)


def test_an_unleased_staging_dir_is_abandoned_only_once_old(store: Store) -> None:
    young = store.root / "staging" / "young"
    young.mkdir(parents=True)
    assert verify_store(store).ok
    old = time.time() - 3600
    os.utime(young, (old, old))
    assert [p.subject for p in verify_store(store).problems] == ["staging/young"]


def test_staging_leftovers_that_are_not_dirs_are_ignored(store: Store, tmp_path: Path) -> None:
    root = store.root / "staging"
    root.mkdir(exist_ok=True)
    (root / "stray-file").write_text("x")
    target = tmp_path / "elsewhere"
    target.mkdir()
    old = time.time() - 3600
    os.utime(target, (old, old))
    (root / "link").symlink_to(target)
    assert verify_store(store).ok


def test_a_ref_changed_behind_the_logs_back_is_found_after_intact_ones(store: Store) -> None:
    """Every ref is compared, not only those before the first that agrees with the log: a
    tampered ref sorted after intact ones is reported too."""
    oids = _runs(store, 3)
    store.refs.path_of("notes/r2").write_text(oids[0] + "\n")
    mismatch = [p for p in verify_store(store).problems if p.kind == "ref-mismatch"]
    assert [p.subject for p in mismatch] == ["notes/r2"]


def test_a_ref_mismatch_says_whether_reindex_can_repair_it(store: Store) -> None:
    """The advice follows the log's object: present, `ledger reindex` repairs the ref; gone,
    reindex cannot, and the message says the object is missing instead."""
    oids = _runs(store, 2)
    store.refs.path_of("notes/r0").write_text(oids[1] + "\n")
    (mismatch,) = [p for p in verify_store(store).problems if p.kind == "ref-mismatch"]
    assert "`ledger reindex` repairs it" in mismatch.message
    assert "missing" not in mismatch.message
    store.objects.path_of(oids[0]).unlink()
    (mismatch,) = [p for p in verify_store(store).problems if p.kind == "ref-mismatch"]
    assert "the log's object is missing" in mismatch.message
    assert "reindex" not in mismatch.message


def test_a_bad_ref_does_not_stop_the_check_of_the_refs_after_it(store: Store) -> None:
    """A ref that holds no object id is reported, and the refs after it are still read: each
    is counted, and none is taken for one that differs from the log."""
    _runs(store, 3)
    store.refs.path_of("notes/r0").write_bytes(b"not an id\n")
    report = verify_store(store)
    assert report.refs == 3
    assert ("bad-ref", "notes/r0") in [(p.kind, p.subject) for p in report.problems]
    assert [p.subject for p in report.problems if p.subject in ("notes/r1", "notes/r2")] == []


def test_a_ref_deleted_while_verify_reads_the_refs_does_not_stop_the_rest(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ref removed between the listing and its reading (a concurrent `ledger rm`) is
    skipped; the refs after it are still read, so a tampered one among them is reported."""
    oids = _runs(store, 3)
    store.refs.path_of("notes/r2").write_text(oids[0] + "\n")
    read = store.refs.get

    def deleted_first(name: str) -> str | None:
        if name == "notes/r0":
            store.refs.path_of(name).unlink()
        return read(name)

    monkeypatch.setattr(store.refs, "get", deleted_first)
    report = verify_store(store)
    assert report.refs == 3
    assert [p.subject for p in report.problems if p.kind == "ref-mismatch"] == [
        "notes/r0",
        "notes/r2",
    ]
