"""Two seeds whose judged metric differs are never refused as identical (``replay/
seed_effect.py``, ``check_first_replays``), even when every value the two runs logged agrees:
a program that logs its metric twice at one step, the second time NaN (an evaluation that
diverged after the real one), keeps NaN at that step in its series while its final value is the
finite one before it. The refusal compared the series only once the final values were equal;
a mutant that skipped that first check in one direction refused these replays as "identical
results". Real `ledger record` and `ledger replay --mode seeds` in a real project."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Takes the seed; its n-th run logs acc 0.5 + n * STEP, then NaN at the same step (the count is
# kept in a file outside the project, so the two replays, one after the other, differ in a
# known order).
NAN_AFTER = """
import sys
from pathlib import Path
import ledger
ledger.seed()
count, step = Path(sys.argv[1]), float(sys.argv[2])
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
print(f"epoch 0 acc {0.5 + n * step!r}")
print("epoch 0 acc nan")
"""


@pytest.mark.parametrize("step", ["0.01", "-0.01"])
def test_two_seeds_that_differ_before_a_nan_at_the_same_step_get_a_verdict(
    tmp_path: Path, step: str
) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "nan_after.py").write_text(NAN_AFTER)
    init_ledger(proj)
    argv = ("--metric", METRIC, "--json", "--", sys.executable, "nan_after.py")
    r = run_ledger("record", *argv, str(tmp_path / "count"), step, cwd=proj)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]

    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--jobs", "1", "--json", cwd=proj
    )
    assert "identical results" not in r.stderr, r.stderr
    assert r.returncode in (0, 1), r.stdout + r.stderr
    verdict = json.loads(r.stdout)
    # Judged on the finite values: the original's 0.5 and the replays' two others.
    replays = verdict["seeds"]["replay"]
    assert replays["n"] == 2
    assert sorted([replays["min"], replays["max"]]) == sorted(
        [0.5 + float(step), 0.5 + 2 * float(step)]
    ), replays
    # Stored under the first replay's id, as the index and `ledger verify` read it.
    ref = proj / ".ledger" / "refs" / "verdicts" / run_id / verdict["replays"][0]
    assert ref.is_file(), sorted(p.name for p in ref.parent.iterdir())
