"""The metric a seeds replay judges when ``--metric`` is not given: accuracy, acc, val_acc,
loss or val_loss, in that order, when the run logged one; else the first of its metrics by
name. Real `ledger record` and `ledger replay` in a real project."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

# Two metrics that vary with the seed ledger gives, neither one of the preferred names.
TWO = """
import random, ledger
ledger.seed()
print(f"epoch 0 ppl {random.random()!r} bleu {random.random()!r}")
"""
TWO_METRIC = r"epoch (?P<step>\d+) ppl (?P<ppl>\S+) bleu (?P<bleu>\S+)"

# loss and acc both logged: acc comes first among the preferred names.
BOTH = """
import random, ledger
ledger.seed()
print(f"epoch 0 loss {random.random()!r} acc {random.random()!r}")
"""
BOTH_METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)"


@pytest.mark.parametrize(
    ("script", "regex", "judged"),
    [(TWO, TWO_METRIC, "bleu"), (BOTH, BOTH_METRIC, "acc")],
    ids=["first-by-name", "acc-before-loss"],
)
def test_seeds_mode_without_metric_judges_the_preferred_or_first_named_metric(
    tmp_path: Path, script: str, regex: str, judged: str
) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(script)
    init_ledger(proj)
    argv = ["record", "--metric", regex, "--json", "--", sys.executable, "train.py"]
    r = run_ledger(*argv, cwd=proj)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", "--json", cwd=proj)
    assert "{\n" in r.stdout, r.stdout + r.stderr
    v = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert v["settings"]["metric"] == judged, v["summary"]
    assert f"the original {judged} = " in v["summary"], v["summary"]
