"""`import ledger` inside a command run under `ledger record`: metrics and seeds land in the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

from ledger.run.find import load_run
from ledger.store import Store

SCRIPT = """
import math, random
import ledger
s = ledger.seed()
for step in range(5):
    ledger.log(step=step, samples=(step + 1) * 8, loss=1.0 / (step + 1) + random.random() * 1e-3)
ledger.log(step=5, loss=math.nan)
"""


def test_in_process_metrics_and_seeds_are_sealed(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(SCRIPT)
    init_ledger(tmp_path)
    r = run_ledger("record", "--json", "--", sys.executable, "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(tmp_path / ".ledger"), run_id)
    loss = next(m for m in run.metrics if m.name == "loss" and m.source == "api")
    assert loss.count == 6 and loss.first_nonfinite_step == 5 and loss.last_finite_step == 4
    assert run.runtime is not None and run.runtime["seeds"]
