"""``ledger.store.staging``: leases held by live recorders, and what a scan sees."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger.store.staging import LEASE, open_staging, release_staging, scan_staging


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_open_staging_holds_a_named_lease_and_nothing_else(tmp_path: Path) -> None:
    run = tmp_path / "staging" / "run-1"
    fd = open_staging(run)
    try:
        assert sorted(p.name for p in run.iterdir()) == [LEASE]
        umask = os.umask(0)
        os.umask(umask)
        # readable by all: a gc or verify run by another user probes it
        assert stat.S_IMODE((run / LEASE).stat().st_mode) == 0o644 & ~umask
        [found] = scan_staging(tmp_path / "staging")
        assert found.live and found.run_id == "run-1" and found.path == run
    finally:
        release_staging(run, fd)
    assert not run.exists() and scan_staging(tmp_path / "staging") == []


def test_open_staging_refuses_an_existing_dir(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    with pytest.raises(FileExistsError):
        open_staging(tmp_path / "run")


def test_the_lease_is_held_by_another_process_until_it_dies(tmp_path: Path) -> None:
    run = tmp_path / "run-2"
    code = (
        "import sys,time; from pathlib import Path; "
        "from ledger.store.staging import open_staging; "
        "open_staging(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with subprocess.Popen(
        [sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "held\n"
            [found] = scan_staging(tmp_path)
            assert found.live
        finally:
            child.kill()
            child.wait()
    [found] = scan_staging(tmp_path)
    assert not found.live


def test_release_can_keep_the_dir_and_tolerates_a_closed_lease(tmp_path: Path) -> None:
    run = tmp_path / "run-3"
    fd = open_staging(run)
    os.close(fd)
    release_staging(run, fd, remove=False)  # closing twice is not an error
    assert run.is_dir()
    release_staging(run, None)
    assert not run.exists()


def test_scan_reports_start_last_write_and_size(tmp_path: Path) -> None:
    run = tmp_path / "run-4"
    release_staging(run, open_staging(run), remove=False)
    (run / "sub").mkdir()
    (run / "sub" / "a").write_bytes(b"x" * 5)
    (run / "b").write_bytes(b"y" * 3)
    _age(run / ".lease", 500)
    _age(run / "b", 400)
    _age(run / "sub", 450)
    _age(run, 450)
    newest = (run / "sub" / "a").stat().st_mtime
    [found] = scan_staging(tmp_path)
    assert found.size == 5 + 3 + (run / LEASE).stat().st_size
    assert found.started == (run / LEASE).stat().st_mtime
    assert found.last_write == newest
    assert not found.live


def test_an_unleased_dir_is_live_while_young(tmp_path: Path) -> None:
    young = tmp_path / "young"
    young.mkdir()
    old = tmp_path / "old"
    old.mkdir()
    _age(old, 900)  # past the ten minutes a recorder may take to take its lease
    found = {s.run_id: s for s in scan_staging(tmp_path)}
    assert found["young"].live and not found["old"].live
    assert found["old"].started == old.stat().st_mtime


def test_scan_of_a_missing_root_and_of_stray_entries(tmp_path: Path) -> None:
    assert scan_staging(tmp_path / "nothing") == []
    (tmp_path / "file").write_text("x")
    target = tmp_path.parent / f"{tmp_path.name}-target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    assert scan_staging(tmp_path) == []


def test_release_tolerates_a_dir_already_gone(tmp_path: Path) -> None:
    run = tmp_path / "run-5"
    fd = open_staging(run)
    (run / LEASE).unlink()
    run.rmdir()  # removed by hand while the recorder ran
    release_staging(run, fd)
    assert not run.exists()


def test_scanning_leaves_no_descriptor_open(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        release_staging(tmp_path / name, open_staging(tmp_path / name), remove=False)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        assert [s.live for s in scan_staging(tmp_path)] == [False, False, False]
    assert len(os.listdir("/proc/self/fd")) == before
