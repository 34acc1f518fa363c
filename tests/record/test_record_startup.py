"""Start-up: the index imports only the standard library's sqlite3 (sqlite_utils cost ~0.1 s of
every ``ledger record``, ``ls`` and ``show``, and pulled pandas/numpy in when installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from ledger.index import Index
import ledger.run_index, ledger.run_tables
print(Index.__name__, *(m in sys.modules for m in ("sqlite_utils", "pandas", "numpy", "click")))
"""


def test_index_import_is_light() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["Index", "False", "False", "False", "False"]
