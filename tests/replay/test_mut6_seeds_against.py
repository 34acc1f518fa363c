"""Seeds mode against a group of original runs (``--against``): the verdict is a Welch TOST of
the original group against the replayed seeds, each original counted once, and its outcome
decides the exit status. Real `ledger record` and `ledger replay` in a real project."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# acc moves with the seed by 0.001 a unit: the originals (seeds 1 and 2) give 0.901 and 0.902,
# the replayed seeds 0, 3 and 4 give 0.900, 0.903 and 0.904: well within a margin of 0.5, and
# too spread for one of 1e-4 either way.
TRAIN = """
import argparse
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=0)
a = p.parse_args()
print(f"epoch 0 acc {0.9 + a.seed * 0.001!r}")
"""


@pytest.fixture
def originals(tmp_path: Path) -> tuple[Path, str, str]:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    init_ledger(proj)
    ids = []
    for seed in ("1", "2"):
        r = run_ledger(
            "record", "--metric", METRIC, "--json", "--", sys.executable, "train.py", "--seed",
            seed, cwd=proj,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        ids.append(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
    return proj, ids[0], ids[1]


def _replay(proj: Path, run_id: str, *extra: str) -> tuple[int, dict]:
    argv = ["replay", run_id, "--mode", "seeds", "--seed-values", "0,3,4", "--seed-arg", "--seed"]
    r = run_ledger(*argv, *extra, "--json", cwd=proj)
    assert "{\n" in r.stdout, r.stdout + r.stderr
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


@pytest.mark.parametrize(
    ("margin", "tost", "outcome", "code"),
    [("0.5", "equivalent", "reproduced", 0), ("0.0001", "inconclusive", "inconclusive", 1)],
)
def test_a_group_of_originals_is_compared_by_welch_tost_each_counted_once(
    originals: tuple[Path, str, str], margin: str, tost: str, outcome: str, code: int
) -> None:
    proj, first, second = originals
    # The second original given twice, and the replayed run itself: each is one original.
    group = ("--against", second, "--against", second, "--against", first)
    rc, v = _replay(proj, first, *group, "--margin", margin)
    assert rc == code, v["summary"]
    assert v["outcome"] == outcome, v["summary"]
    assert v["summary"].startswith(
        f"seeds: Welch TOST on acc, 2 original vs 3 replayed seeds, margin {float(margin):g} "
        f"(user): {tost}"
    ), v["summary"]
    assert v["settings"]["original_group"] == [first, second]
    assert v["seeds"]["tost"]["n_original"] == 2 and v["seeds"]["single_run"] is None
    needed = v["seeds"]["tost"]["seeds_needed"]
    if tost == "inconclusive":
        # too close a margin for this spread: how many seeds would decide it is said
        assert isinstance(needed, int) and needed > 3
        assert v["summary"].endswith(f"; about {needed} seeds per group needed"), v["summary"]
    else:
        assert needed is None and "seeds per group needed" not in v["summary"]
    assert not any("exchangeable" in n for n in v["notes"])  # not the single-original rank
