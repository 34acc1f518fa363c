"""Helpers shared by tests (tests/ is on sys.path through conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for child processes that must import this checkout's ``ledger``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def run_ledger(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=subprocess_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def require_component(found: object, what: str, install: str) -> None:
    """Skip a test whose external component is missing, except on CI (``CI=true``): there
    ``.ci/run`` installs it, so its absence means a broken install step and the test fails."""
    import pytest

    if found:
        return
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{what} is missing on CI, where .ci/run installs it ({install})")
    pytest.skip(f"{what} is not installed: {install}")


def require_module(name: str, install: str = "make install") -> Any:
    """``pytest.importorskip`` that fails on CI instead, where ``make install`` provides every
    extra: a package missing there is a broken install step, not a test to skip."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        require_component(None, f"the Python package {name}", install)


# Root reads and writes through any file mode: a child run under ``setpriv`` without these
# capabilities sees permissions as a user would (tests of "permission denied" paths).
SETPRIV = shutil.which("setpriv")
_DROP_DAC = "-dac_override,-dac_read_search"


def run_without_dac_override(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` importing this checkout, as root without the capabilities that let
    root ignore file modes; needs ``SETPRIV``."""
    assert SETPRIV is not None
    drop = [f"--inh-caps={_DROP_DAC}", f"--bounding-set={_DROP_DAC}"]
    return subprocess.run(
        [SETPRIV, *drop, sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
