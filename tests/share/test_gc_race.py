"""gc racing a pull or an import: a real `ledger gc --yes --grace-hours 0` runs while a real
`ledger pull` / `ledger import` has its objects in the store and has not made its refs yet.
Pulls and imports hold the lease recorders hold, and touch every object they rely on, so gc
keeps them all: the ref never points at a deleted object and no run is skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _forge import Forge
from _support import init_ledger, run_ledger, subprocess_env

from ledger.store import Store

pytestmark = [pytest.mark.slow]

# `ledger ARGS...` as the CLI runs it, paused just before its first ref is made (the window
# in which gc may collect what it brought) until the test says go.
PAUSED = """
import pathlib, runpy, sys, time
from ledger.store.repo import Store

sig = pathlib.Path(sys.argv.pop(1))
create_ref = Store.create_ref


def paused(self, *args, **kwargs):
    if not (sig / "ready").exists():
        (sig / "ready").write_text("")
        while not (sig / "go").exists():
            time.sleep(0.05)
    return create_ref(self, *args, **kwargs)


Store.create_ref = paused
sys.argv[0] = "ledger"
runpy.run_module("ledger", run_name="__main__")
"""


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300  # generous: only a hung child reaches it
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.05)


def _age(store: Store, objects: dict[str, bytes]) -> None:
    """This ledger already holds every object, unreferenced and two days old (a run it
    deleted, say): what a pull or import finds here it must still keep from gc."""
    t = time.time() - 48 * 3600
    for data in objects.values():
        os.utime(store.objects.path_of(store.objects.put_bytes(data)), (t, t))


@pytest.mark.parametrize("way", ["import", "pull", "import-aged", "pull-aged"])
def test_gc_during_a_pull_or_import_deletes_nothing_it_brings(
    packaged: tuple[Path, str, Path], tmp_path: Path, way: str
) -> None:
    repo, run_id, pkg = packaged
    forge = Forge(pkg)
    remote = tmp_path / "remote"
    if way.startswith("pull"):
        assert run_ledger("push", str(remote), cwd=repo).returncode == 0
    (tmp_path / "paused.py").write_text(PAUSED)
    for trial in range(3):
        here = tmp_path / f"here{trial}"
        here.mkdir()
        init_ledger(here)
        store = Store.open(here / ".ledger")
        if way.endswith("aged"):
            _age(store, forge.objects)
        sig = tmp_path / f"sig{trial}"
        sig.mkdir()
        args = ["import", str(pkg)] if way.startswith("import") else ["pull", str(remote)]
        proc = subprocess.Popen(
            [sys.executable, str(tmp_path / "paused.py"), str(sig), *args],
            cwd=here,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for(sig / "ready", proc)
            gc = run_ledger("gc", "--yes", "--grace-hours", "0", "--json", cwd=here)
            assert gc.returncode == 0, gc.stderr
            deleted = set(json.loads(gc.stdout)["deleted"])
            assert not deleted & set(forge.objects), f"trial {trial}: gc took what {way} brought"
        finally:
            (sig / "go").touch()
            out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"trial {trial}: {out}{err}"
        assert store.refs.get(f"runs/{run_id}") == forge.ref("runs/")[1]
        r = run_ledger("verify", cwd=here)
        assert r.returncode == 0, f"trial {trial}: {r.stdout}"
        assert list((here / ".ledger" / "staging").iterdir()) == []  # the lease is gone
