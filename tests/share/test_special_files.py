"""A FIFO or a symlink to /dev/zero where a ledger or a remote keeps a file: every command
that meets one fails at once, naming the file, instead of waiting on the FIFO for ever or
reading /dev/zero until memory runs out (issue 36, point 10). Each command runs in a
subprocess with a generous timeout: a hang fails the test."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.store import Store
from ledger.store.safe_read import NotRegularError

SPECIAL = ["fifo", "dev-zero"]


def _plant(path: Path, kind: str) -> None:
    """Replace ``path`` (a file) with a FIFO nobody writes, or a symlink to /dev/zero."""
    if path.exists() or path.is_symlink():
        path.chmod(0o644)
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def _copy(repo: Path, tmp_path: Path) -> tuple[Path, Store]:
    here = tmp_path / "repo"
    shutil.copytree(repo, here, symlinks=True)
    return here, Store.open(here / ".ledger")


def _refused(r: object, what: str) -> None:
    out = r.stdout + r.stderr  # type: ignore[attr-defined]
    assert r.returncode != 0, out  # type: ignore[attr-defined]
    assert what in out, out
    assert "not a regular file" in out, out
    assert "Traceback" not in out, out


def _run_record(store: Store, run_id: str) -> str:
    oid = store.refs.get(f"runs/{run_id}")
    assert oid is not None
    return oid


def _a_blob(store: Store, run_id: str) -> str:
    """An object of the run that is not a record (a file's content)."""
    for oid in store.objects:
        if store.objects.get_bytes(oid)[:1] != b"{":
            return oid
    raise AssertionError("no blob in the ledger")


# -- the ledger's own files -----------------------------------------------------------------------
DOORS: dict[str, Callable[[Store, str], Path]] = {
    "object": lambda s, run: s.objects.path_of(_a_blob(s, run)),
    "run-record": lambda s, run: s.objects.path_of(_run_record(s, run)),
    "log": lambda s, run: s.root / "log" / "chain.jsonl",
    "ref": lambda s, run: s.refs.path_of(f"runs/{run}"),
    "config": lambda s, run: s.root / "config.json",
}


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("door", sorted(DOORS))
def test_verify_and_show_refuse_a_special_file_in_the_ledger(
    packaged: tuple[Path, str, Path], tmp_path: Path, door: str, kind: str
) -> None:
    repo, run_id, _ = packaged
    here, store = _copy(repo, tmp_path)
    target = DOORS[door](store, run_id)
    _plant(target, kind)
    rel = str(target.relative_to(store.root))
    _refused(run_ledger("verify", cwd=here), rel)
    if door != "object":  # a file's content is not read by show
        _refused(run_ledger("show", run_id, cwd=here), rel)


# -- a path remote's files ------------------------------------------------------------------------
def _pushed(packaged: tuple[Path, str, Path], tmp_path: Path) -> Path:
    repo, _, _ = packaged
    remote = tmp_path / "remote"
    r = run_ledger("push", str(remote), cwd=repo)
    assert r.returncode == 0, r.stderr
    return remote


def _remote_object(remote: Path) -> Path:
    return sorted(p for p in (remote / "objects").rglob("*") if p.is_file())[0]


REMOTE_DOORS: dict[str, Callable[[Path], Path]] = {
    "marker": lambda remote: remote / "ledgerremote.json",
    "origin": lambda remote: next((remote / "origins").iterdir()),
    "object": _remote_object,
}


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("door", sorted(REMOTE_DOORS))
def test_pull_and_clone_refuse_a_special_file_on_a_path_remote(
    packaged: tuple[Path, str, Path], tmp_path: Path, door: str, kind: str
) -> None:
    remote = _pushed(packaged, tmp_path)
    target = REMOTE_DOORS[door](remote)
    _plant(target, kind)
    r = run_ledger("clone", str(remote), str(tmp_path / "clone"), cwd=tmp_path)
    _refused(r, str(target))
    here = tmp_path / "puller"
    here.mkdir()
    init_ledger(here)
    _refused(run_ledger("pull", str(remote), cwd=here), str(target))
    assert list(Store.open(here / ".ledger").refs.iter()) == []


@pytest.mark.parametrize("kind", SPECIAL)
def test_record_is_not_stopped_by_a_special_file_in_the_cache(
    packaged: tuple[Path, str, Path], tmp_path: Path, kind: str
) -> None:
    """The caches are derived: a FIFO or a link there is passed over (the cache starts
    afresh), not read."""
    repo, _, _ = packaged
    here, store = _copy(repo, tmp_path)
    cache = store.root / "cache"
    cache.mkdir(exist_ok=True)
    (here / "data").mkdir()
    (here / "data" / "x.txt").write_text("x\n")
    for name in ("secrets-clean.v1", "stat-cache.v2"):
        _plant(cache / name, kind)
    r = run_ledger("record", "--input", "data", "--", sys.executable, "-c", "pass", cwd=here)
    assert r.returncode == 0, r.stderr


def test_a_lock_file_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    """A link at locks/refs.lock would make every write create (and lock) its target."""
    store = Store.init(tmp_path / ".ledger")
    victim = tmp_path / "victim"
    (store.root / "locks" / "refs.lock").symlink_to(victim)
    oid = store.put_json({"kind": "note", "schema": 1})
    with pytest.raises(NotRegularError, match=r"refs\.lock is a symbolic link"):
        store.set_ref("notes/x", oid)
    assert not victim.exists() and store.refs.get("notes/x") is None
