"""gc racing writers and runs: a real `ledger gc` process runs while another process holds a
reused (deduplicated) object that it has not linked yet, or while a recorded run is in flight;
and the staging dirs of killed recorders are reported by verify and removed by gc."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger, subprocess_env

from ledger.store import Store

pytestmark = [pytest.mark.slow]

# Reuses an object (its bytes are already stored), waits, then links it: the window in which a
# concurrent gc must not delete it. In a ledger.start() run when argv[4] is "run".
WRITER = """
import pathlib, sys, time
from contextlib import nullcontext
import ledger
from ledger.store import Store

store = Store.open(sys.argv[1])
content, sig = bytes.fromhex(sys.argv[2]), pathlib.Path(sys.argv[3])
ctx = ledger.start(name="writer") if sys.argv[4] == "run" else nullcontext()
with ctx:
    oid, new = store.objects.put_bytes_new(content)
    (sig / "ready").write_text(f"{oid} {new}")
    while not (sig / "go").exists():
        time.sleep(0.05)
    store.set_ref("notes/kept", store.put_json({"kind": "note", "schema": 1, "blob": oid}))
"""

BLOCK = """
import os, pathlib, sys, time
pathlib.Path("child.pid").write_text(str(os.getpid()))
while os.environ.get("HOLD") and not pathlib.Path("go").exists():
    time.sleep(0.05)
print(open("data.csv").read())
"""


BLOCK_CMD = [sys.executable, "block.py"]


def _aged_garbage(store: Store, content: bytes) -> str:
    """An object no ref reaches, written two days ago (a deleted run's, say)."""
    oid = store.objects.put_bytes(content)
    t = time.time() - 48 * 3600
    os.utime(store.objects.path_of(oid), (t, t))
    return oid


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.05)


def _gc_json(cwd: Path, *args: str) -> dict[str, object]:
    r = run_ledger("gc", "--json", *args, cwd=cwd)
    assert r.returncode == 0, r.stderr
    report: dict[str, object] = json.loads(r.stdout)
    return report


@pytest.mark.parametrize(
    ("mode", "grace"),
    [
        ("plain", "24"),  # grace period: reusing an object must count as writing it now
        ("run", "0"),  # no grace at all: the live run's lease protects what it touched
    ],
)
def test_concurrent_gc_never_deletes_a_reused_object_before_it_is_linked(
    tmp_path: Path, mode: str, grace: str
) -> None:
    init_ledger(tmp_path)
    store = Store.open(tmp_path / ".ledger")
    content = os.urandom(4096)
    oid = _aged_garbage(store, content)
    (tmp_path / "writer.py").write_text(WRITER)
    sig = tmp_path / "sig"
    sig.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "writer.py", str(store.root), content.hex(), str(sig), mode],
        cwd=tmp_path,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(sig / "ready", proc)
        assert (sig / "ready").read_text() == f"{oid} False"  # deduplicated, not rewritten
        report = _gc_json(tmp_path, "--yes", "--grace-hours", grace)
        assert oid not in report["deleted"]  # type: ignore[operator]
        assert oid in report["too_young"]  # type: ignore[operator]
        if mode == "run":
            assert len(report["live_runs"]) == 1  # type: ignore[arg-type]
        assert store.objects.has(oid)
    finally:
        (sig / "go").touch()
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    verify = run_ledger("verify", cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert store.objects.get_bytes(oid) == content
    # Once linked, a gc with no grace at all keeps it as reachable.
    assert oid not in _gc_json(tmp_path, "--yes", "--grace-hours", "0")["deleted"]  # type: ignore[operator]
    assert store.objects.has(oid)


def _git_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "block.py").write_text(BLOCK)
    (root / ".gitignore").write_text(".ledger/\ndata.csv\ngo\nchild.pid\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    (root / "data.csv").write_text("a,b\n1,2\n")
    init_ledger(root)
    return root


def _start_recorder(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ledger", "record", "--input", "data.csv", "--", *BLOCK_CMD],
        cwd=root,
        env=subprocess_env(HOLD="1"),  # not passed on to a replay
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_gc_with_no_grace_during_a_recorded_run_keeps_it_whole(tmp_path: Path) -> None:
    root = _git_project(tmp_path)
    store = Store.open(root / ".ledger")
    # The input's bytes are already stored, by a run since deleted, two days ago.
    data_oid = _aged_garbage(store, (root / "data.csv").read_bytes())
    proc = _start_recorder(root)
    try:
        _wait_for(root / "child.pid", proc)
        (staging,) = (root / ".ledger" / "staging").iterdir()
        report = _gc_json(root, "--yes", "--grace-hours", "0")
        assert report["live_runs"] == [staging.name]
        assert report["staging_removed"] == []
        assert staging.is_dir() and store.objects.has(data_oid)
        verify = run_ledger("verify", cwd=root)  # a live run is not abandoned
        assert verify.returncode == 0, verify.stdout
    finally:
        (root / "go").touch()
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    _gc_json(root, "--yes", "--grace-hours", "0")
    assert run_ledger("verify", cwd=root).returncode == 0
    (root / "data.csv").unlink()  # only the stored copy is left
    replay = run_ledger("replay", staging.name, cwd=root)
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_staging_dir_of_a_killed_recorder_is_reported_then_collected(tmp_path: Path) -> None:
    root = _git_project(tmp_path)
    proc = _start_recorder(root)
    try:
        _wait_for(root / "child.pid", proc)
        (staging,) = (root / ".ledger" / "staging").iterdir()
        proc.send_signal(signal.SIGKILL)  # the recorder dies; no seal, no cleanup
        proc.communicate(timeout=60)
    finally:
        child = root / "child.pid"
        if child.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child.read_text()), signal.SIGKILL)
    assert staging.is_dir()

    verify = run_ledger("verify", cwd=root)
    assert verify.returncode == 1
    assert f"abandoned-staging: staging/{staging.name}" in " ".join(verify.stdout.split())

    # Younger than the grace period: kept.
    report = _gc_json(root, "--yes")
    assert report["staging_removed"] == [] and staging.is_dir()

    old = time.time() - 48 * 3600
    for dirpath, _dirs, files in os.walk(staging):
        for name in [*files, "."]:
            os.utime(os.path.join(dirpath, name), (old, old), follow_symlinks=False)
    dry = run_ledger("gc", cwd=root)
    assert dry.returncode == 0 and "would remove 1 abandoned staging dir" in dry.stdout
    assert staging.is_dir()
    report = _gc_json(root, "--yes")
    assert report["staging_removed"] == [staging.name]
    assert not staging.exists()
    verify = run_ledger("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout
