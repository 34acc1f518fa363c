"""One time axis for a run: the wall times of its stdout metrics and of its program's own
(``ledger.log``) count from the same instant, the run's start, and its end is where the command
ended, whatever was done between the start and the launch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _support import REPO, init_ledger, subprocess_env

# Records a program that logs a point and prints one at the same moment, with the work
# between the run's start and the launch (the outputs' snapshot) made to take 2 s.
PROBE = """
import json, sys, time
import ledger.capture.outputs as outputs
import ledger.run.record as rr
from ledger.run.options import RecordOptions
from ledger.store import Store

snapshot = outputs.snapshot_outputs
def slow_snapshot(*a, **k):
    time.sleep(2.0)
    return snapshot(*a, **k)
outputs.snapshot_outputs = slow_snapshot
prog = "import ledger; ledger.log(step=0, api=1.0); print('x 1', flush=True)"
store = Store.open(None)
run = rr.record(
    RecordOptions(command=[sys.executable, "-c", prog], metrics=[r"x (?P<x>\\d+)"]), store
).run
walls = {m.name: json.loads(store.objects.get_bytes(m.series))["wall"] for m in run.metrics}
print(json.dumps({
    "walls": walls,
    "elapsed": (run.ended - run.started).total_seconds(),
    "wall_seconds": run.wall_seconds,
}))
"""


def test_stdout_and_program_points_share_the_run_s_time_axis(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    r = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=subprocess_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    (api,), (x,) = got["walls"]["api"], got["walls"]["x"]
    # Both were logged after the 2 s before the launch, within moments of each other; stdout's
    # counted from after the snapshot, 2 s late on the program's axis.
    assert api >= 2.0 and x >= 2.0, got
    assert abs(api - x) < 1.0, got
    # The run ended where the command did: 2 s after its start, and more than its own wall time.
    assert got["elapsed"] >= got["wall_seconds"] + 2.0, got
