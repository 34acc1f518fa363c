"""Start-up: the index is imported without pandas/numpy (sqlite_utils would pull them in for
0.3 s of every ``ledger record``, ``ls`` and ``show``), and only in the importing thread."""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ledger.index._sqlite import _SkipInThisThread

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from ledger.index import Index
print(Index.__name__, "pandas" in sys.modules, "numpy" in sys.modules)
import sqlite_utils.db
print(sqlite_utils.db.pd is None, sqlite_utils.db.np is None)
import pandas  # still importable afterwards, by anyone
print(pandas.__name__)
"""


def test_index_import_skips_pandas_and_numpy() -> None:
    pytest.importorskip("pandas")
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert out[:3] == ["Index False False", "True True", "pandas"]


def test_skip_applies_to_its_own_thread_only(tmp_path: Path) -> None:
    (tmp_path / "ledger_probe_mod.py").write_text("VALUE = 7\n")
    sys.path.insert(0, str(tmp_path))
    skip = _SkipInThisThread(frozenset({"ledger_probe_mod"}))
    sys.meta_path.insert(0, skip)
    try:
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("ledger_probe_mod")
        seen: list[int] = []

        def other() -> None:
            seen.append(importlib.import_module("ledger_probe_mod").VALUE)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [7]
    finally:
        sys.meta_path.remove(skip)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("ledger_probe_mod", None)
