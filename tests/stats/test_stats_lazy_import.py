"""``ledger.stats`` loads its names on first use: a bitwise or tolerance replay needs no scipy
(importing it took seconds of every ``ledger replay``), and every public name still resolves."""

from __future__ import annotations

import subprocess
import sys

from _support import subprocess_env

import ledger.stats as stats

PROBE = """
import sys
from ledger.stats import Tolerance, bitwise_equal, compare_series
print("scipy" in sys.modules)
"""


def test_replay_comparisons_do_not_import_scipy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=subprocess_env(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_every_public_name_resolves() -> None:
    assert set(stats.__all__) == set(stats._WHERE)
    for name in stats.__all__:
        assert getattr(stats, name) is not None
    assert sorted(dir(stats)) == sorted(stats.__all__)
