"""``make demo`` installs only what the demo needs (#39: every extra took 2.2 GB and minutes):
requirements/demo.txt, the lock's own entries for ledger's core and its torch extra, with the
lock's versions and hashes (scripts/lock_subset.py), closed under their requirements."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "requirements" / "demo.txt"
LOCK = ROOT / "requirements" / "lock.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:[ \\\n]+--hash=\S+)+)", re.M)


def _pins(path: Path) -> dict[str, tuple[str, str]]:
    return {canonicalize_name(m[1]): (m[2], m[3]) for m in _PIN.finditer(path.read_text())}


def test_demo_lock_is_what_the_lock_gives() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock_subset.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_demo_lock_takes_the_lock_entries_of_the_core_and_torch_only() -> None:
    demo, lock = _pins(DEMO), _pins(LOCK)
    assert demo and all(lock[n] == pin for n, pin in demo.items())  # versions and hashes
    assert demo["torch"][0].endswith("+cpu") and "sqlite-utils" in demo
    for heavy in ("dvc", "mlflow-skinny", "onnxruntime", "s3fs", "pandas", "mkdocs-material"):
        assert heavy in lock and heavy not in demo, heavy
    assert len(demo) < len(lock) / 2


def test_every_requirement_of_the_demo_packages_is_in_it() -> None:
    """What ``pip install --no-deps`` leaves out would be missing at run time: each package's
    own requirements (this platform's markers, no extras) are in the file too."""
    demo = _pins(DEMO)
    missing = []
    for name in demo:
        for text in md.requires(name) or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            # pip is the environment's own: the lock leaves it out (--unsafe-package pip).
            if canonicalize_name(req.name) not in demo and req.name != "pip":
                missing.append(f"{name} needs {req}")
    assert missing == []


def test_make_demo_installs_the_demo_lock_and_make_test_everything() -> None:
    make = (ROOT / "Makefile").read_text()
    demo = re.search(r"^demo: (.*)$", make, re.M)
    test = re.search(r"^test: (.*)$", make, re.M)
    assert demo and test and demo.group(1).split() == ["install-demo"], make
    assert test.group(1).split() == ["install"]
    install_demo = make.split("\ninstall-demo:\n", 1)[1].split("\n\n", 1)[0]
    assert "--require-hashes --no-deps -r requirements/demo.txt" in install_demo
    assert "lock_subset.py" in (ROOT / "scripts" / "lock.sh").read_text()


def test_the_demo_runs_the_python_make_installed_into(tmp_path: Path) -> None:
    """``make demo PYTHON=.venv/bin/python`` (a virtual environment not activated) installs
    there, and examples/demo.sh runs that Python, for ``ledger`` and for the training script:
    not the first ``ledger`` or ``python3`` on PATH (which had no ledger: the demo stopped on
    ModuleNotFoundError). Here PATH holds neither; PYTHON is a relative path, as the README's
    user would give it."""
    import os

    from _support import subprocess_env

    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("git", "mktemp", "cp", "rm", "dirname"):  # what the script itself calls
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=True)
        (tools / tool).symlink_to(found.stdout.strip())
    # This Python by a path relative to the demo's folder, as the README's user gives it. Not
    # a symlink to it elsewhere: a virtual environment's Python is one only when started from
    # its own bin/ (pyvenv.cfg beside it); a link from tmp_path started the base Python, which
    # on a fresh machine has no typer (7 December).
    env = subprocess_env(PATH=str(tools), PYTHON=os.path.relpath(sys.executable, tmp_path))
    r = subprocess.run(
        ["/bin/bash", str(ROOT / "examples" / "demo.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "REPRODUCED (bitwise)" in r.stdout and "ledger verified" in r.stdout
    assert not os.path.exists(tmp_path / ".ledger")  # the demo's own repository, removed
