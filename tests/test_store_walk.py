"""Links between objects (``ledger.store.walk``), which decide what gc keeps and what ``ledger
verify`` calls missing: the three sorts of link by key, which objects count as records, and the
walk's reports. Pinned because mutation testing (issue #18) found them unchecked: a link not
followed is an object gc deletes while a record still names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store.walk import MAX_RECORD, iter_links, links_of, reachable


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def _absent(tag: str) -> str:
    return hash_bytes(f"never stored: {tag}".encode())


A, B, C, D = (_absent(t) for t in "abcd")


def test_the_sort_of_a_link_is_decided_by_its_key() -> None:
    value = {
        "kind": "run",
        "code": A,  # a link
        "data_digest": B,  # a content link
        "inputs": [{"digest": C, "name": "x"}],
        "checkpoint_digest": D,  # not a link: checkpoints live by their refs
        "nested": {"under_digest": [{"code": A}], "text": "b3:not-an-id", "n": 3},
    }
    assert sorted(iter_links(value)) == sorted(
        [(A, True), (B, False), (C, False), (A, False)]
    )  # everything under a content key is a content link, however deep
    assert list(iter_links([A, {"checkpoint_digest": [A]}])) == [(A, True)]
    assert list(iter_links(A, content=True)) == [(A, False)]
    assert list(iter_links("b3:" + "0" * 63)) == []


def test_a_record_needs_kind_and_schema_and_a_json_object(store: Store) -> None:
    objects = store.objects
    record = store.put_json({"kind": "run", "schema": 1, "code": A, "more": [A], "d_digest": B})
    # The same id as a link and a content link is a link.
    assert sorted(links_of(objects, record)) == sorted([(A, True), (B, False)])
    for not_a_record in (
        store.put_json({"kind": "run", "code": A}),  # no schema
        store.put_json({"schema": 1, "code": A}),  # no kind
        store.put_json([{"kind": "run", "schema": 1, "code": A}]),  # not an object
        objects.put_bytes(b'{"kind": "run", "schema": 1, "code": "' + A.encode()),  # not JSON
        objects.put_bytes(b' {"kind": "run", "schema": 1, "code": "' + A.encode() + b'"}'),
        objects.put_bytes(b"{\xff}"),  # not UTF-8
    ):
        assert links_of(objects, not_a_record) == []


def test_objects_over_64_mib_are_never_read_as_records(store: Store) -> None:
    assert MAX_RECORD == 64 << 20
    head = b'{"kind": "run", "schema": 1, "code": "' + A.encode() + b'", "pad": "'
    at_limit = head + b"x" * (MAX_RECORD - len(head) - 3) + b'"}'  # 64 MiB - 1
    over = head + b"x" * (MAX_RECORD - len(head) - 2) + b'"}'
    oid = store.objects.put_bytes(at_limit, compress=False)
    # Stored from offset 4096 (codec 0x02): the limit is on the payload, not the file, so the
    # layout does not move it (the file is over 64 MiB, the record under).
    assert store.objects.size_on_disk(oid) > MAX_RECORD
    assert store.objects.payload_size(oid) == MAX_RECORD - 1
    assert links_of(store.objects, oid) == [(A, True)]
    big = store.objects.put_bytes(over, compress=False)
    assert links_of(store.objects, big) == []
    # The same records in the one-byte layout of files written before 0x02: the same answers.
    for content, links in ((at_limit, [(A, True)]), (over, [])):
        path = store.objects.path_of(store.objects.put_bytes(content, compress=False))
        path.chmod(0o644)
        path.write_bytes(b"\x00" + content)
        assert links_of(store.objects, hash_bytes(content)) == links


def test_the_walk_reports_missing_roots_and_links_but_not_content(store: Store) -> None:
    blob = store.objects.put_bytes(b"weights")
    leaf = store.put_json({"kind": "leaf", "schema": 1, "blob": blob, "gone": A, "maybe_digest": B})
    mid = store.put_json({"kind": "mid", "schema": 1, "leaf": leaf, "again": leaf})
    damaged = store.put_json({"kind": "bad", "schema": 1, "gone": C})
    store.objects.path_of(damaged).unlink()
    store.objects.path_of(damaged).write_bytes(b"\x09garbage")  # an unknown codec byte
    missing: list[tuple[str, str | None]] = []
    seen = reachable(store.objects, [mid, D, damaged, mid], lambda o, p: missing.append((o, p)))
    assert seen == {mid, leaf, blob, damaged}
    # A missing root has no parent; a content link that is absent is not missing; the
    # damaged record's links cannot be read, and the walk goes on past it.
    assert sorted(missing, key=str) == sorted([(A, leaf), (D, None)], key=str)
    assert reachable(store.objects, [mid]) == {mid, leaf, blob}  # no callback: no error
