"""Symlinks planted inside a path remote are never followed (issue 36, point 4): a push with
the remote's ``tmp/`` linked to a victim folder once deleted every file there older than a
day; with ``objects/b3/xx`` linked elsewhere it wrote objects there. Each test plants the
link, runs the real command, and checks the victim's files are all there, unchanged."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from _support import run_ledger


def _victim(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder of someone's files, two days old (older than any stale-upload cutoff)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    files = {f"precious-{i}.txt": f"keep me {i}\n".encode() for i in range(3)}
    old = time.time() - 2 * 24 * 3600
    for name, data in files.items():
        (victim / name).write_bytes(data)
        os.utime(victim / name, (old, old))
    return victim, files


def _untouched(victim: Path, files: dict[str, bytes]) -> None:
    assert sorted(p.name for p in victim.iterdir()) == sorted(files)
    for name, data in files.items():
        assert (victim / name).read_bytes() == data


def _refused(r: object, where: str) -> None:
    out = r.stdout + r.stderr  # type: ignore[attr-defined]
    assert r.returncode != 0, out  # type: ignore[attr-defined]
    assert where in out and "symbolic link" in out and "never follows" in out, out
    assert "Traceback" not in out, out


def _pushed(repo: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote"
    r = run_ledger("push", str(remote), cwd=repo)
    assert r.returncode == 0, r.stderr
    return remote


def _link(path: Path, target: Path) -> None:
    shutil.rmtree(path)
    path.symlink_to(target, target_is_directory=True)


def test_push_never_sweeps_a_linked_tmp(packaged: tuple[Path, str, Path], tmp_path: Path) -> None:
    repo, _, _ = packaged
    remote = _pushed(repo, tmp_path)
    victim, files = _victim(tmp_path)
    _link(remote / "tmp", victim)
    _refused(run_ledger("push", str(remote), cwd=repo), "tmp")
    _untouched(victim, files)


def test_push_never_writes_objects_through_a_linked_fan_folder(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, _, _ = packaged
    remote = _pushed(repo, tmp_path)
    fan = sorted((remote / "objects" / "b3").iterdir())[0]
    victim, files = _victim(tmp_path)
    _link(fan, victim)
    _refused(run_ledger("push", str(remote), cwd=repo), f"objects/b3/{fan.name}")
    _untouched(victim, files)


@pytest.mark.parametrize("linked", ["objects", "origins"])
def test_push_never_writes_through_a_linked_top_folder(
    packaged: tuple[Path, str, Path], tmp_path: Path, linked: str
) -> None:
    repo, _, _ = packaged
    remote = _pushed(repo, tmp_path)
    victim, files = _victim(tmp_path)
    _link(remote / linked, victim)
    _refused(run_ledger("push", str(remote), cwd=repo), linked)
    _untouched(victim, files)


def test_pull_never_reads_through_a_linked_folder(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """A remote whose objects/ is a link to another ledger's objects: the clone refuses it
    rather than take objects from outside the remote."""
    repo, _, _ = packaged
    remote = _pushed(repo, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(remote / "objects", elsewhere)
    _link(remote / "objects", elsewhere)
    clone = tmp_path / "clone"
    _refused(run_ledger("clone", str(remote), str(clone), cwd=tmp_path), "objects")
    assert not (clone / ".ledger").exists()  # a clone that fails leaves no ledger behind


def test_pull_refuses_an_object_linked_to_a_file_outside(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """An object replaced by a link to a file of the puller's machine is never read."""
    repo, _, _ = packaged
    remote = _pushed(repo, tmp_path)
    victim, _ = _victim(tmp_path)
    obj = sorted(p for p in (remote / "objects").rglob("*") if p.is_file())[-1]
    obj.chmod(0o644)
    obj.unlink()
    obj.symlink_to(victim / "precious-0.txt")
    r = run_ledger("clone", str(remote), str(tmp_path / "clone"), cwd=tmp_path)
    assert r.returncode != 0 and str(obj) in r.stderr and "symbolic link" in r.stderr, r.stderr
