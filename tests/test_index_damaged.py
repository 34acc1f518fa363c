"""A damaged ``index.sqlite`` (truncated, overwritten, a FIFO) is named with what to do, and
``ledger reindex`` rebuilds it from nothing.

Before, a truncated index ended ``ls``, ``show`` and ``reindex`` itself in
``sqlite3.DatabaseError: database disk image is malformed``. The index is derived from the log
and the objects: every command that opens it says "run `ledger reindex`" (exit 3), and reindex
deletes a file SQLite finds damaged and folds the log into a new one.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.index import Index
from ledger.store import Store


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damaged") / "proj"
    root.mkdir()
    init_ledger(root)
    for name in ("first", "second", "third"):
        r = run_ledger("record", "--name", name, "--", "python", "-c", "print(1)", cwd=root)
        assert r.returncode == 0, r.stderr
    return root


@pytest.fixture
def proj(recorded: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "proj"
    shutil.copytree(recorded, copy, symlinks=True)
    return copy


def _truncate(index: Path) -> None:
    with open(index, "r+b") as f:
        f.truncate(os.path.getsize(index) // 2)


def _overwrite(index: Path) -> None:
    index.write_bytes(b"SQLite format 3\x00" + b"\xa5" * 8000)


def _fifo(index: Path) -> None:
    index.unlink()
    os.mkfifo(index)


DAMAGE = {"truncated": _truncate, "overwritten": _overwrite, "fifo": _fifo}


def _damage(proj: Path, how: str) -> None:
    ledger = proj / ".ledger"
    for extra in ("index.sqlite-wal", "index.sqlite-shm"):
        (ledger / extra).unlink(missing_ok=True)
    DAMAGE[how](ledger / "index.sqlite")


def said_reindex(r: object) -> None:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert r.returncode == 3, stderr[-2000:]  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and "sqlite3." not in stderr, stderr[-2000:]
    assert stderr.startswith("ledger: error: the index ") and "is damaged" in stderr, stderr
    assert "run `ledger reindex`" in stderr


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_commands_that_read_the_index_say_run_reindex(proj: Path, how: str) -> None:
    _damage(proj, how)
    for args in (["ls"], ["show", "second"], ["ls", "--json"], ["diff", "first", "second"]):
        said_reindex(run_ledger(*args, cwd=proj))


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_reindex_rebuilds_from_nothing(proj: Path, how: str) -> None:
    _damage(proj, how)
    r = run_ledger("reindex", cwd=proj)
    assert r.returncode == 0, r.stderr
    assert "The index file was damaged" in r.stderr and "deleted and rebuilt" in r.stderr
    assert "Index rebuilt from 6 log entries." in r.stdout  # a start and a seal per run
    listed = run_ledger("ls", cwd=proj)
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in ("first", "second", "third"))
    store = Store.open(proj / ".ledger")
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    with Index(store) as index, Index(store, conn=fresh) as again:
        again.rebuild()
        assert index.dump() == again.dump()  # the same rows a fold of the log gives


def test_reindex_json_names_the_damage_and_a_healthy_index_is_rebuilt_in_place(
    proj: Path,
) -> None:
    r = run_ledger("reindex", "--json", cwd=proj)
    done = {"log_entries_applied": 6, "refs_repaired": [], "refs_left": []}
    assert r.returncode == 0 and json.loads(r.stdout) == done
    assert "damaged" not in r.stderr
    _damage(proj, "overwritten")
    r = run_ledger("reindex", "--json", cwd=proj)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == done | {"damaged": "file is not a database"}


def test_a_run_recorded_over_a_damaged_index_is_kept_and_listed_after_reindex(
    proj: Path,
) -> None:
    _damage(proj, "truncated")
    r = run_ledger("record", "--name", "fourth", "--", "python", "-c", "pass", cwd=proj)
    assert r.returncode == 0, r.stderr  # the run is in the objects and the log
    assert run_ledger("reindex", cwd=proj).returncode == 0
    assert "fourth" in run_ledger("ls", cwd=proj).stdout
