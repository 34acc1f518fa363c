"""``ledger gc``: mark everything reachable from refs; sweep the rest once it is old enough."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .repo import Store
from .walk import reachable

__all__ = ["GcReport", "collect_garbage"]

DEFAULT_GRACE_SECONDS = 24 * 3600


@dataclass
class GcReport:
    reachable: int = 0
    unreachable: list[str] = field(default_factory=list)
    too_young: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    tmp_removed: int = 0
    dry_run: bool = True


def collect_garbage(
    store: Store, *, delete: bool = False, grace_seconds: float = DEFAULT_GRACE_SECONDS
) -> GcReport:
    """Objects younger than ``grace_seconds`` are kept even when unreachable: a writer may be
    between putting its objects and setting the ref that makes them reachable."""
    report = GcReport(dry_run=not delete)
    now = time.time()
    # Ref changes take this lock; holding it makes the mark a consistent snapshot.
    with store.lock():
        roots = [oid for _, oid in store.refs.iter()]
        live = reachable(store.objects, roots)
        report.reachable = len(live)
        for oid in store.objects:
            if oid in live:
                continue
            path = store.objects.path_of(oid)
            st = path.stat()
            if now - st.st_mtime < grace_seconds:
                report.too_young.append(oid)
                continue
            report.unreachable.append(oid)
            if delete:
                store.objects.delete(oid)
                report.deleted.append(oid)
                report.freed_bytes += st.st_size
        for tmp in store.tmp_dir.iterdir():
            if now - tmp.stat().st_mtime >= grace_seconds:
                if delete:
                    tmp.unlink(missing_ok=True)
                report.tmp_removed += 1
    return report
