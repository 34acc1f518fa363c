"""``collect_garbage`` beyond objects: the reachable count, temp files, staging dirs, and the
cutoff a live run moves back."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from ledger.store import Store
from ledger.store.gc import _sweep, collect_garbage
from ledger.store.staging import open_staging, release_staging

DAY = 24 * 3600


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t), follow_symlinks=False)


def test_the_report_counts_what_is_reachable(store: Store) -> None:
    blob = store.objects.put_bytes(b"linked")
    store.set_ref("runs/a", store.put_json({"kind": "note", "schema": 1, "blob": blob}), op="seal")
    store.objects.put_bytes(b"unlinked")
    report = collect_garbage(store)
    assert report.reachable == 2
    assert report.dry_run and not collect_garbage(store, delete=True).dry_run


def test_old_temp_files_go_and_young_ones_stay(store: Store) -> None:
    old, young = (store.tmp_dir / n for n in ("old.tmp", "young.tmp"))
    old.write_bytes(b"o")
    young.write_bytes(b"y")
    _age(old, 2 * DAY)
    dry = collect_garbage(store)
    assert dry.tmp_removed == 1 and old.exists()
    done = collect_garbage(store, delete=True)
    assert done.tmp_removed == 1
    assert not old.exists() and young.exists()


def test_a_writers_abandoned_staging_folder_goes_and_a_live_one_stays(store: Store) -> None:
    """A killed `ledger import mlflow` left tmp/mlflow-import-*/ (its downloaded artifacts):
    gc skipped folders, so neither gc nor the rerun ever removed it. A folder is as old as the
    newest thing in it."""
    dead = store.tmp_dir / "mlflow-import-dead"
    (dead / "run" / "artifacts").mkdir(parents=True)
    (dead / "run" / "artifacts" / "model.bin").write_bytes(b"w" * 1000)
    live = store.tmp_dir / "mlflow-import-live"
    (live / "run").mkdir(parents=True)
    (live / "run" / "part.bin").write_bytes(b"p")
    for p in (*dead.rglob("*"), dead, live, live / "run"):
        _age(p, 2 * DAY)  # the live folder's file is fresh: it is still being written
    assert collect_garbage(store).tmp_removed == 1 and dead.exists()
    done = collect_garbage(store, delete=True)
    assert done.tmp_removed == 1
    assert not dead.exists() and (live / "run" / "part.bin").exists()


def test_a_live_run_keeps_what_was_written_since_it_began(store: Store) -> None:
    before = store.objects.put_bytes(b"written before the run")
    since = store.objects.put_bytes(b"written during the run")
    _age(store.objects.path_of(before), 3 * DAY)
    _age(store.objects.path_of(since), 2 * DAY)
    run = store.root / "staging" / "run-1"
    fd = open_staging(run)
    try:
        _age(run / ".lease", 2 * DAY + 60)  # the run began a minute before `since`
        report = collect_garbage(store, delete=True, grace_seconds=3600)
        assert report.live_runs == ["run-1"]
        assert report.deleted == [before] and report.too_young == [since]
        assert store.objects.has(since) and run.is_dir()
        assert report.staging_removed == []
    finally:
        release_staging(run, fd)
    assert collect_garbage(store, delete=True, grace_seconds=3600).deleted == [since]


def test_abandoned_staging_goes_once_older_than_the_grace_period(store: Store) -> None:
    staging = store.root / "staging"
    old, young = staging / "old-run", staging / "young-run"
    for path in (old, young):
        release_staging(path, open_staging(path), remove=False)
        (path / "blob").write_bytes(b"x" * 7)
    for p in (old / "blob", old / ".lease", old):
        _age(p, 2 * DAY)
    dry = collect_garbage(store, grace_seconds=DAY)
    assert dry.staging_removed == ["old-run"] and dry.staging_bytes == 7 and old.is_dir()
    done = collect_garbage(store, delete=True, grace_seconds=DAY)
    assert done.staging_removed == ["old-run"] and done.staging_bytes == 7
    assert not old.exists() and young.is_dir()
    assert done.live_runs == []


def test_sweeping_an_object_already_gone_deletes_nothing(store: Store) -> None:
    oid = store.objects.put_bytes(b"gone")
    store.objects.path_of(oid).unlink()
    assert not _sweep(store, oid, time.time())


def test_a_swept_object_leaves_nothing_aside(store: Store) -> None:
    oid = store.objects.put_bytes(b"old")
    _age(store.objects.path_of(oid), 2 * DAY)
    assert _sweep(store, oid, time.time() - DAY)
    assert not store.objects.has(oid) and list(store.tmp_dir.iterdir()) == []


def test_the_default_grace_is_one_day(store: Store) -> None:
    kept = store.objects.put_bytes(b"a minute short of a day")
    gone = store.objects.put_bytes(b"ten seconds past a day")
    _age(store.objects.path_of(kept), DAY - 60)
    _age(store.objects.path_of(gone), DAY + 10)
    report = collect_garbage(store, delete=True)
    assert report.deleted == [gone] and report.too_young == [kept]


def test_an_object_touched_exactly_at_the_cutoff_is_kept(store: Store) -> None:
    oid = store.objects.put_bytes(b"touched at the cutoff")
    cutoff = float(int(time.time()) - 3600)
    os.utime(store.objects.path_of(oid), (cutoff, cutoff))
    assert not _sweep(store, oid, cutoff)
    assert store.objects.has(oid)


def test_an_object_written_exactly_when_a_live_run_began_is_kept(store: Store) -> None:
    oid = store.objects.put_bytes(b"written as the run began")
    began = float(int(time.time()) - 2 * DAY)
    os.utime(store.objects.path_of(oid), (began, began))
    run = store.root / "staging" / "run-1"
    fd = open_staging(run)
    try:
        os.utime(run / ".lease", (began, began))
        dry = collect_garbage(store, grace_seconds=3600)
        assert dry.too_young == [oid] and dry.unreachable == []
        report = collect_garbage(store, delete=True, grace_seconds=3600)
        assert report.too_young == [oid] and store.objects.has(oid)
    finally:
        release_staging(run, fd)


def test_a_temp_file_as_old_as_a_live_run_is_kept(store: Store) -> None:
    began = float(int(time.time()) - 2 * DAY)
    tmp = store.tmp_dir / "writer.tmp"
    tmp.write_bytes(b"being written")
    os.utime(tmp, (began, began))
    run = store.root / "staging" / "run-1"
    fd = open_staging(run)
    try:
        os.utime(run / ".lease", (began, began))
        report = collect_garbage(store, delete=True, grace_seconds=3600)
        assert report.tmp_removed == 0 and tmp.exists()
    finally:
        release_staging(run, fd)


def test_a_temp_folder_as_new_as_a_live_run_is_kept(store: Store) -> None:
    """A writer's tmp/ folder, older than the cutoff (here the start of a live run), whose
    newest entry is exactly as old as the cutoff is kept, like an object of that age."""
    began = float(int(time.time()) - 2 * DAY)
    folder = store.tmp_dir / "mlflow-import-live"
    (folder / "run").mkdir(parents=True)
    (folder / "run" / "part.bin").write_bytes(b"p")
    os.utime(folder / "run" / "part.bin", (began, began))
    for p in (folder / "run", folder):
        os.utime(p, (began - 60, began - 60))
    run = store.root / "staging" / "run-1"
    fd = open_staging(run)
    try:
        os.utime(run / ".lease", (began, began))
        report = collect_garbage(store, delete=True, grace_seconds=3600)
        assert report.tmp_removed == 0 and (folder / "run" / "part.bin").exists()
    finally:
        release_staging(run, fd)


def test_folders_gc_cannot_remove_do_not_stop_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tmp/ folder or an abandoned staging dir holding a file that cannot be unlinked
    (another user's, on a file system that refuses it) is left as it is, and gc goes on."""
    stuck = store.tmp_dir / "import-stuck"
    stuck.mkdir()
    (stuck / "locked.bin").write_bytes(b"x")
    for p in (stuck / "locked.bin", stuck):
        _age(p, 2 * DAY)
    staging = store.root / "staging"
    for name in ("run-stuck", "run-z"):
        release_staging(staging / name, open_staging(staging / name), remove=False)
    (staging / "run-stuck" / "locked.bin").write_bytes(b"x")
    for p in staging.rglob("*"):
        _age(p, 2 * DAY)
    real_unlink = os.unlink

    def unlink(path: str, *args: Any, **kwargs: Any) -> None:
        if str(path).endswith("locked.bin"):
            raise PermissionError(1, "Operation not permitted", str(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    report = collect_garbage(store, delete=True)
    assert (stuck / "locked.bin").exists() and (staging / "run-stuck" / "locked.bin").exists()
    assert report.staging_removed == ["run-stuck", "run-z"] and not (staging / "run-z").exists()
