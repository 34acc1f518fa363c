"""``ledger clone``: a new ledger holding every run of a remote, or no new ledger at all.

The ledger is made and filled under a hidden name beside its place (``DIR/.ledger-clone-…``)
and renamed to ``DIR/.ledger`` only once the pull has passed the door (``door.admit``): a
remote that holds what ``ledger verify`` rejects, or cannot be read to the end, leaves no
ledger behind (a folder the clone had to create is removed too). Cloning into a folder that
already has a ledger pulls into that ledger, as ``ledger pull`` would.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from ..errors import UsageError
from ..store import Store
from ..store.atomic import fsync_dir
from ..store.staging import LEASE, open_staging, release_staging, staging_state
from .remote import Remote, add_remote, is_explicit_location
from .transfer import PullReport, pull

__all__ = ["DIRNAME", "clone"]

DIRNAME = ".ledger"


def clone(url: str, directory: Path) -> tuple[Store, PullReport]:
    """Pull every run of the remote at ``url`` into ``directory``'s ledger, with the remote
    named ``origin``; the ledger exists afterwards only if the pull succeeded."""
    if not is_explicit_location(url):  # a new ledger has no remote names to look up
        raise UsageError(
            f"{url!r} is not a path or URL; nothing was made",
            hint=f"a folder is written as a path (./{url}), a bucket as s3://bucket/prefix",
        )
    remote = Remote(url)
    remote.check(create=False)  # before anything is created here
    directory = directory.absolute()
    root = directory / DIRNAME
    if (root / "config.json").is_file():
        store = Store.init(root)
        add_remote(store, "origin", url)
        return store, pull(store, remote, None)
    made_dir = not directory.exists()
    left = _remove_left_behind(directory)
    work = directory / f"{DIRNAME}-clone-{uuid.uuid4().hex[:12]}"
    lease = None
    try:
        # Held while the clone runs: a clone killed mid-way (SIGKILL, a power cut) leaves its
        # folder with a lease nobody holds, which the next clone into DIR removes.
        lease = open_staging(work)
        store = Store.init(work)
        add_remote(store, "origin", url)
        report = pull(store, remote, None)
        (work / LEASE).unlink()  # not part of the ledger; the lock goes with the descriptor
        os.rename(work, root)  # refuses to replace a ledger made meanwhile
        fsync_dir(directory)
    except BaseException:
        release_staging(work, lease)
        if made_dir:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    release_staging(work, lease, remove=False)
    report.notes += [f"removed {p.name}, left by a clone that was killed" for p in left]
    return Store.open(root), report


def _remove_left_behind(directory: Path) -> list[Path]:
    """The ``.ledger-clone-*`` folders in ``directory`` that no running clone holds (their
    clone was killed before it could clean up), removed."""
    if not directory.is_dir():
        return []
    gone = []
    for path in sorted(directory.glob(f"{DIRNAME}-clone-*")):
        state = staging_state(path)
        if state is not None and not state.live:
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path)
    return gone
