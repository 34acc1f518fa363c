"""Bitwise means bit for bit: -0.0 is not 0.0, and one NaN payload is not another (issue #18).

Every place that claims "bitwise" (the stats helper, structured-file comparison and the replay
verdict on metric values) is checked with values that ``==`` or ``is_close`` call equal.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _support import init_ledger, run_ledger

from ledger.replay.compare import CompareSettings, compare_files
from ledger.stats import bitwise_equal


def _nan(payload: int) -> float:
    """A quiet fp64 NaN with the given mantissa payload."""
    return float(struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0])


def test_bitwise_equal_tells_signed_zeros_and_nan_payloads_apart() -> None:
    assert 0.0 == -0.0 and not bitwise_equal(0.0, -0.0)
    assert bitwise_equal(-0.0, -0.0) and bitwise_equal(1.5, 1.5)
    a, b = _nan(1), _nan(2)
    assert struct.pack("<d", a) != struct.pack("<d", b)
    assert not bitwise_equal(a, b)
    assert bitwise_equal(a, _nan(1))  # the same payload is the same bits, though NaN != NaN
    assert not bitwise_equal(np.float32(-0.0), np.float32(0.0))
    # Same value, other width: not the same bits.
    assert not bitwise_equal(np.float32(0.5), np.float64(0.5))
    assert bitwise_equal(np.float32(0.5), np.float32(0.5))


def test_bitwise_structured_comparison_refuses_a_signed_zero(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = tmp_path / "a" / "m.json", tmp_path / "b" / "m.json"
    a.write_text('{"x": 0.0, "y": [1.0, 2.0]}')
    b.write_text('{"x": -0.0, "y": [1.0, 2.0]}')
    result = compare_files(a, b, CompareSettings(mode="bitwise"))
    assert result.status != "identical"
    assert result.first_difference is not None and result.first_difference.key == "x"
    # Formatting alone is not a difference: the same values written another way are identical.
    b.write_text('{\n "y": [1.00, 2.0], "x": 0.0}')
    assert compare_files(a, b, CompareSettings(mode="bitwise")).status == "identical"


SIGNED_ZERO = """
import os
zero = -0.0 if os.environ.get("NEGATIVE_ZERO") else 0.0
for step in range(3):
    print(f"epoch {step} loss {1.0 / (step + 1)!r} acc {zero!r}", flush=True)
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "zero.py").write_text(SIGNED_ZERO)
    (root / ".gitignore").write_text(".ledger/\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    return root


def _replay(project: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, object]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=project, **env)
    start = r.stdout.index("{\n")
    return r.returncode, json.loads(r.stdout[start:])


def test_a_replay_that_logs_minus_zero_for_zero_is_not_bitwise(project: Path) -> None:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "zero.py", cwd=project
    )
    assert r.returncode == 0, r.stderr
    run_id = str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])

    code, verdict = _replay(project, run_id)
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict

    code, verdict = _replay(project, run_id, NEGATIVE_ZERO="1")
    assert (code, verdict["outcome"]) == (1, "not-reproduced"), verdict
    assert "not bitwise identical" in str(verdict["summary"])

    # Within any tolerance the two zeros are the same number.
    code, verdict = _replay(
        project, run_id, "--mode", "tolerance", "--rtol", "0", "--atol", "0", NEGATIVE_ZERO="1"
    )
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict
