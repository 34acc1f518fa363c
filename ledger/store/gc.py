"""``ledger gc``: mark everything reachable from refs; sweep the rest once it is old enough.

What is kept (docs/format.md, "Garbage collection"):

- every object reachable from a ref through links and content links (``walk``), a ref being
  a ref file or what the fold of the log says a ref holds (they differ after a crash
  between a log append and its ref write, until ``ledger reindex`` repairs the file);
- every object whose mtime is after the cutoff: ``now - grace``, moved back to the start of
  the oldest run still in flight (``staging``). Writers set the mtime of every object they
  write *or reuse* (``ObjectStore.touch``), so whatever a live run may still link is kept,
  even with a grace of 0;
- an object a writer touched while gc was deleting it: gc moves the file aside, looks at its
  mtime again and puts it back if it was touched, and a writer that finds the file gone
  writes it again.

Abandoned staging dirs (no recorder holds their lease) older than the grace period are
removed too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .atomic import fsync_dir
from .repo import Store
from .staging import scan_staging
from .walk import reachable

__all__ = ["GcReport", "collect_garbage"]

DEFAULT_GRACE_SECONDS = 24 * 3600


@dataclass
class GcReport:
    reachable: int = 0
    unreachable: list[str] = field(default_factory=list)  # deleted, or would be (dry run)
    too_young: list[str] = field(default_factory=list)  # unreachable, kept by the cutoff
    deleted: list[str] = field(default_factory=list)
    freed_bytes: int = 0  # of the unreachable objects: freed, or that would be (dry run)
    tmp_removed: int = 0
    staging_removed: list[str] = field(default_factory=list)  # run ids (or would be)
    staging_bytes: int = 0
    live_runs: list[str] = field(default_factory=list)  # run ids whose recorder is alive
    dry_run: bool = True


def _sweep(store: Store, oid: str, cutoff: float) -> bool:
    """Delete one object unless a writer touched it meanwhile; True if deleted."""
    final = store.objects.path_of(oid)
    aside = store.tmp_dir / f"gc-{oid[3:]}"
    try:
        os.rename(final, aside)
    except FileNotFoundError:
        return False
    # A writer's touch either reached the file before the rename (seen here) or found no
    # file after it (and wrote the object again).
    if aside.stat().st_mtime >= cutoff:
        with contextlib.suppress(FileExistsError):
            os.link(aside, final)
        aside.unlink()
        return False
    aside.unlink()
    fsync_dir(final.parent)
    return True


def collect_garbage(
    store: Store, *, delete: bool = False, grace_seconds: float = DEFAULT_GRACE_SECONDS
) -> GcReport:
    """Objects younger than ``grace_seconds`` are kept even when unreachable, and so are those
    written or reused since the oldest live run began: a writer may be between putting its
    objects and setting the ref that makes them reachable."""
    report = GcReport(dry_run=not delete)
    now = time.time()
    cutoff = now - grace_seconds
    staging = scan_staging(store.root / "staging")
    for s in staging:
        if s.live:
            report.live_runs.append(s.run_id)
            cutoff = min(cutoff, s.started)
    # Ref changes take this lock; holding it makes the mark a consistent snapshot. The roots
    # are the ref files and what the fold of the log says each ref holds: a writer killed
    # between its log append (the commit point) and its ref file leaves a committed record
    # that only the log names.
    with store.lock():
        roots = {oid for _, oid in store.refs.iter()} | set(store.ref_state_from_log().values())
        live = reachable(store.objects, roots)
        report.reachable = len(live)
        for oid in store.objects:
            if oid in live:
                continue
            try:
                st = store.objects.path_of(oid).stat()
            except FileNotFoundError:
                continue
            if st.st_mtime >= cutoff:
                report.too_young.append(oid)
                continue
            if delete and not _sweep(store, oid, cutoff):
                report.too_young.append(oid)
                continue
            report.unreachable.append(oid)
            report.freed_bytes += st.st_size
            if delete:
                report.deleted.append(oid)
        for tmp in store.tmp_dir.iterdir():
            try:  # a temp file of a live writer is as young as the objects it touches
                old = tmp.lstat().st_mtime < cutoff
            except FileNotFoundError:
                continue
            if old and tmp.is_dir() and not tmp.is_symlink():
                # A writer's staging folder (an MLflow or package import killed midway): as
                # old as the newest thing in it, so a live one that still writes is kept.
                if _newest_mtime(tmp) >= cutoff:
                    continue
                if delete:
                    shutil.rmtree(tmp, ignore_errors=True)
                report.tmp_removed += 1
            elif old:
                if delete:
                    tmp.unlink(missing_ok=True)
                report.tmp_removed += 1
    for s in staging:
        if s.live or now - s.last_write < grace_seconds:
            continue
        report.staging_removed.append(s.run_id)
        report.staging_bytes += s.size
        if delete:
            shutil.rmtree(s.path, ignore_errors=True)
    return report


def _newest_mtime(folder: Path) -> float:
    newest = folder.lstat().st_mtime
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
    return newest
