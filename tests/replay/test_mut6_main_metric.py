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


# Two ranks, as torchrun starts them (RANK, WORLD_SIZE): both log loss, only rank 0 logs acc
# (it alone evaluates), so acc has no series of the whole run, only rank 0's.
RANKS = """
import os, random, subprocess, sys
if "RANK" not in os.environ:
    env = {**os.environ, "WORLD_SIZE": "2"}
    ranks = [subprocess.Popen([sys.executable, __file__], env={**env, "RANK": str(r)})
             for r in (0, 1)]
    sys.exit(max(p.wait() for p in ranks))
import ledger
root = ledger.seed().root
rank = int(os.environ["RANK"])
ledger.log(step=0, loss=random.Random(root * 2 + rank).random())
if rank == 0:
    ledger.log(step=0, acc=random.Random(root).random())
"""


def test_a_distributed_run_is_judged_on_a_metric_of_all_its_ranks(tmp_path: Path) -> None:
    """The metric judged is one of the run's whole series (a single process's, or the ranks'
    combined one), never a single rank's: acc, logged by rank 0 alone, is passed over for the
    combined loss, although acc comes first among the preferred names."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(RANKS)
    init_ledger(proj)
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", cwd=proj)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    assert {(m["name"], m["rank"], m["source"]) for m in shown["run"]["metrics"]} == {
        ("acc", 0, "api"),
        ("loss", 0, "api"),
        ("loss", 1, "api"),
        ("loss", None, "combined"),
    }
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", "--json", cwd=proj)
    assert "{\n" in r.stdout, r.stdout + r.stderr
    v = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert v["settings"]["metric"] == "loss", v["summary"]
    assert "the original loss = " in v["summary"], v["summary"]
