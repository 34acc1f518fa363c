"""Item 8: --help and errors load no heavy stack (numpy, scipy, torch, pandas)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _support import run_ledger

HEAVY = ("numpy", "scipy", "torch", "pandas")

CASES = [
    ["--help"],
    ["--version"],
    ["audit", "--help"],
    ["replay", "--help"],
    ["audit", "missing.yaml"],
    ["audit", "claims.yaml", "-L", "no-such-ledger"],
    ["show", "nosuchrun"],
    ["ls", "--status", "bogus"],
    ["replay", "x", "--rtol", "abc"],
    ["checkpoint", "export", "x", "-f", "onnx", "-o", "y"],
    ["check", "--help"],
    ["gate", "--help"],
    ["check", "m:f", "--levels", "warp", "-L", "no-such-ledger"],
    ["check", "m:f", "--levels", "warp", "--no-store"],
    ["gate", "x.pt", "--spec", "m:f", "--checks", "warp", "--no-store"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_no_heavy_imports(project: Path, argv: list[str]) -> None:
    (project / "claims.yaml").write_text("claims: []\n")
    r = run_ledger(*argv, cwd=project, PYTHONPROFILEIMPORTTIME="1")
    assert "Traceback" not in r.stderr
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", r.stderr, re.M))
    assert imported, "no import timings: -X importtime did not apply"
    top = {name.split(".")[0] for name in imported}
    assert not top & set(HEAVY), sorted(top & set(HEAVY))
