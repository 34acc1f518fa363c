"""The environment fingerprint taken in a fresh process, as ``ledger record`` takes it.

Its speed goal lived in a test (a 1,000 ms bound that a loaded machine broke); the test keeps
what it checks regardless of speed (torch not imported, the determinism fields) and the figure
lives here.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench import Row

NAME = "fingerprint"
REPO = Path(__file__).resolve().parent.parent

_CODE = (
    "import json, time\n"
    "from ledger.capture.env import fingerprint\n"
    "t = time.perf_counter(); fingerprint(); print(json.dumps(time.perf_counter() - t))\n"
)


def _once() -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout)) * 1000


def run(quick: bool) -> list[Row]:
    reps = 3 if quick else 9
    ms = statistics.median(_once() for _ in range(reps))
    return [
        Row(
            NAME,
            "`fingerprint()` in a fresh process (torch installed, not imported)",
            ms,
            "ms",
            target="≤ 1,000 ms",
            passed=ms <= 1000,
            note=f"median of {reps} processes; the call alone, not the interpreter's start",
        )
    ]
