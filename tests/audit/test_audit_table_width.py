"""The audit table at the width a person has (a real pseudo-terminal, ``COLUMNS`` on a pipe):
columns go whole before a word is broken, so a verdict reads ``inconclusive``, never
``inconclusi`` / ``ve`` (``ledger._columns``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _audit_lab import Lab
from _pty import run_on_pty
from _support import run_ledger

CLAIMS = """\
paper: "Doe et al. 2026"
claims:
  - id: resnet-baseline-accuracy-on-the-held-out-test-split
    metric: test/acc
    value: 90.6
    spread: 0.6
    spread_type: std
    n_seeds: 3
    split: test
    varied_sources: [seed, data order]
    runs: {names: [small]}
    source: {table: "2", row: "ResNet-50 (ours, three seeds)"}
"""


@pytest.fixture
def claims(lab: Lab) -> Path:
    lab.seeds("small", [90.0, 90.6, 91.2])
    return lab.claims(CLAIMS)


def _table(lines: list[str]) -> list[str]:
    start = next(i for i, ln in enumerate(lines) if ln.startswith("audit "))
    end = next(i for i, ln in enumerate(lines) if i > start and not ln.strip())
    return lines[start + 1 : end]


@pytest.mark.parametrize("columns", [60, 80])
def test_audit_table_on_a_terminal_never_breaks_a_word(
    lab: Lab, claims: Path, columns: int
) -> None:
    code, lines = run_on_pty("audit", str(claims), cwd=lab.dir, columns=columns)
    assert code == 1, lines  # inconclusive: not supported
    table = _table(lines)
    assert all(len(ln) <= columns for ln in table), table
    assert re.search(r"\binconclusive\b", "\n".join(table)), table
    words = {w for ln in table for w in ln.split()}
    assert not any(w.startswith("inconclusi") and w != "inconclusive" for w in words), table
    header = table[0].split()
    assert header[0] == "#" and "verdict" in header
    if columns == 80:  # the claim id's 51 characters fit beside the verdict
        assert "claim" in header and "resnet-baseline-accuracy-on-the-held-out-test-split" in words


def test_audit_table_honours_columns_on_a_pipe(lab: Lab, claims: Path) -> None:
    r = run_ledger("audit", str(claims), cwd=lab.dir, COLUMNS="60")
    assert r.returncode == 1, r.stderr
    table = _table(r.stdout.splitlines())
    assert all(len(ln) <= 60 for ln in table), table
    assert "inconclusive" in "\n".join(table).split()
