from __future__ import annotations

import os
import time

from ledger.store import Store
from ledger.store.gc import collect_garbage
from ledger.store.verify import verify_store


def _age(store: Store, oid: str, seconds: float) -> None:
    path = store.objects.path_of(oid)
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_gc_keeps_reachable_and_young_objects(store: Store) -> None:
    kept_blob = store.objects.put_bytes(b"kept")
    rec = store.put_json({"kind": "note", "schema": 1, "blob": kept_blob})
    store.set_ref("runs/a", rec)
    old = store.objects.put_bytes(b"old garbage")
    young = store.objects.put_bytes(b"young garbage")
    for oid in (kept_blob, rec, old):
        _age(store, oid, 48 * 3600)

    dry = collect_garbage(store)
    assert dry.dry_run and dry.unreachable == [old] and dry.too_young == [young]
    assert store.objects.has(old)

    report = collect_garbage(store, delete=True)
    assert report.deleted == [old]
    assert not store.objects.has(old)
    assert store.objects.has(young) and store.objects.has(kept_blob) and store.objects.has(rec)
    assert verify_store(store).ok


def test_gc_after_ref_deletion(store: Store) -> None:
    blob = store.objects.put_bytes(b"x" * 100)
    rec = store.put_json({"kind": "note", "schema": 1, "blob": blob})
    store.set_ref("runs/a", rec)
    store.delete_ref("runs/a")
    report = collect_garbage(store, delete=True, grace_seconds=0)
    assert set(report.deleted) == {blob, rec}
    assert verify_store(store).ok
