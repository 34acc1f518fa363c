"""Environment labels name real differences only (issue #32, point 6).

A run recorded with ``--env PYTHONPATH`` gets the recorded ``PYTHONPATH`` back in its replay,
so neither the variable nor a package found through it is drift, whatever the shell that
replays has set; a package whose version really changed, or a variable the replay does not
restore, is still labelled ``different-environment``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import REPO, init_ledger, run_ledger

from ledger.capture.env import import_path

SCRIPT = """
import pyfoo
print("pyfoo", pyfoo.VALUE, flush=True)
"""


def _site(root: Path, version: str) -> Path:
    """A package supplied on PYTHONPATH only: its code and its dist-info."""
    site = root / "site"
    for old in site.glob("pyfoo-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    (site / "pyfoo").mkdir(parents=True, exist_ok=True)
    (site / "pyfoo" / "__init__.py").write_text("VALUE = 3\n")
    info = site / f"pyfoo-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pyfoo\nVersion: {version}\n")
    return site


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    init_ledger(root)
    return root


def _record(project: Path, site: Path, *args: str, **env: str) -> str:
    r = run_ledger(
        "record", "--env", "PYTHONPATH", *args, "--json", "--", sys.executable, "train.py",
        cwd=project, PYTHONPATH=f"{REPO}{os.pathsep}{site}", **env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(project: Path, run_id: str, **env: str) -> dict[str, Any]:
    # The shell that replays has only ledger on its PYTHONPATH, not the package's folder.
    r = run_ledger("replay", run_id, "--json", cwd=project, PYTHONPATH=str(REPO), **env)
    assert "{\n" in r.stdout, r.stderr[-3000:]
    verdict: dict[str, Any] = json.loads(r.stdout[r.stdout.index("{\n") :])
    return verdict


def _fields(verdict: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {
        d["field"]: (d["original"], d["current"])
        for d in verdict["environment_drift"]
        if d["affects_numerics"]
    }


def test_a_restored_pythonpath_and_its_package_are_not_drift(project: Path) -> None:
    site = _site(project.parent, "1.0")
    run_id = _record(project, site)
    verdict = _replay(project, run_id)
    assert verdict["outcome"] == "reproduced", verdict["summary"]
    assert "different-environment" not in verdict["labels"], _fields(verdict)
    assert "determinism.env.PYTHONPATH" not in _fields(verdict)
    assert "packages.pyfoo" not in _fields(verdict)


def test_a_package_that_changed_is_still_labelled(project: Path) -> None:
    site = _site(project.parent, "1.0")
    run_id = _record(project, site)
    _site(project.parent, "2.0")  # the folder PYTHONPATH names now holds another version
    verdict = _replay(project, run_id)
    assert "different-environment" in verdict["labels"]
    assert _fields(verdict)["packages.pyfoo"] == ("1.0", "2.0")
    assert "determinism.env.PYTHONPATH" not in _fields(verdict)


def test_a_variable_the_replay_does_not_restore_is_still_labelled(project: Path) -> None:
    site = _site(project.parent, "1.0")
    run_id = _record(project, site, OMP_PROC_BIND="close")  # kept in the fingerprint only
    verdict = _replay(project, run_id, OMP_PROC_BIND="spread")
    assert "different-environment" in verdict["labels"]
    assert _fields(verdict) == {"determinism.env.OMP_PROC_BIND": ("close", "spread")}


def test_import_path_swaps_the_pythonpath_entries(tmp_path: Path) -> None:
    base = ["/script", "/mine/a", "/mine/b", "/usr/lib/python3", ""]
    current = {"PYTHONPATH": "/mine/a:/mine/b"}
    environ = {"PYTHONPATH": "/theirs:rel"}
    got = import_path(environ, "/orig/cwd", base, current)
    assert got == ["/script", "/theirs", "/orig/cwd/rel", "/usr/lib/python3", ""]
    assert import_path({}, "/x", base, current) == ["/script", "/usr/lib/python3", ""]
    assert import_path(current, "/x", base, current) == base[:3] + base[3:]
