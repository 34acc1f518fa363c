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
    store.set_ref("notes/a", rec)
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
    store.set_ref("notes/a", rec)
    store.delete_ref("notes/a")
    report = collect_garbage(store, delete=True, grace_seconds=0)
    assert set(report.deleted) == {blob, rec}
    assert verify_store(store).ok


def test_gc_dry_run_reports_the_bytes_it_would_free(store: Store) -> None:
    old = store.objects.put_bytes(os.urandom(1000))
    _age(store, old, 48 * 3600)
    size = store.objects.size_on_disk(old)
    dry = collect_garbage(store)
    assert dry.unreachable == [old] and dry.freed_bytes == size and store.objects.has(old)
    done = collect_garbage(store, delete=True)
    assert done.deleted == [old] and done.freed_bytes == size


def test_content_links_keep_stored_content_and_may_dangle(store: Store) -> None:
    stored = store.objects.put_bytes(b"an input that was copied")
    never = "b3:" + "ab" * 32  # an input hashed with --no-store-inputs: never stored
    ckpt = store.put_json({"kind": "checkpoint", "schema": 1, "note": "dropped by retention"})
    rec = store.put_json(
        {
            "kind": "note",
            "schema": 1,
            "inputs": [{"digest": stored}, {"digest": never}],
            "checkpoints": [{"checkpoint_digest": ckpt}],
        }
    )
    store.set_ref("notes/a", rec)
    for oid in (stored, ckpt, rec):
        _age(store, oid, 48 * 3600)
    report = collect_garbage(store, delete=True, grace_seconds=0)
    assert report.deleted == [ckpt]  # retention, not the run, decides about checkpoints
    assert store.objects.has(stored)
    assert verify_store(store).ok  # a content link to nothing is not a missing object


def test_an_object_touched_while_gc_deletes_it_is_put_back(store: Store) -> None:
    from ledger.store.gc import _sweep

    oid = store.objects.put_bytes(b"reused by a writer")
    _age(store, oid, 48 * 3600)
    cutoff = time.time() - 3600  # gc listed it as older than this...
    assert store.objects.touch(oid)  # ...then a writer reused it before the sweep
    assert not _sweep(store, oid, cutoff)
    assert store.objects.get_bytes(oid) == b"reused by a writer"
    assert not any(store.tmp_dir.iterdir())
    _age(store, oid, 48 * 3600)
    assert _sweep(store, oid, cutoff) and not store.objects.has(oid)
    assert not store.objects.touch(oid)  # a writer that finds it gone must write it again
