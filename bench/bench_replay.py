"""Replay overhead: ``ledger replay RUN`` of a ~10 s training command against the same command
run bare, interleaved in one run. What replay adds beyond the command itself: rebuilding the
workspace, recording the replayed run (start-up and sealing), comparing and the verdict."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, baseline_checkout, bytecode_env, in_turn

NAME = "replay: overhead beyond the command"
REPO = Path(__file__).resolve().parent.parent

# A small deterministic "training": seeded steps that print a loss, a pause per step standing
# in for the compute (so the command's own time does not swing with the machine's load), and a
# model file at the end.
TRAIN = """
import json, random, sys, time
steps, pause = int(sys.argv[1]), float(sys.argv[2])
rng = random.Random(0)
w = [rng.gauss(0, 1) for _ in range(256)]
for step in range(steps):
    grad = [x * 0.01 + rng.gauss(0, 1e-3) for x in w]
    w = [x - g for x, g in zip(w, grad)]
    loss = sum(x * x for x in w) / len(w)
    print(f"step {step} loss {loss:.6f}", flush=True)
    time.sleep(pause)
with open("model.json", "w") as f:
    json.dump(w, f)
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("LEDGER_DIR", None)
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def _project(root: Path, env: dict[str, str]) -> None:
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    for args in (
        ["init", "-q"],
        ["config", "user.email", "bench@example.org"],
        ["config", "user.name", "bench"],
        ["add", "train.py"],
        ["commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    subprocess.run(
        [sys.executable, "-m", "ledger", "init"], cwd=root, env=env, check=True, capture_output=True
    )


def run(quick: bool) -> list[Row]:
    steps, pause = (20, 0.1) if quick else (100, 0.1)
    reps = 2 if quick else 4  # even: each order as often (``bench.in_turn``)
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-replay-", dir="/tmp"))
    env = bytecode_env(_env(), tmp / "pycache")
    base = baseline_checkout(tmp / "baseline")
    try:
        project = tmp / "project"
        _project(project, env)
        command = [sys.executable, "train.py", str(steps), str(pause)]
        recorded = subprocess.run(
            [
                sys.executable,
                "-m",
                "ledger",
                "record",
                "--name",
                "bench",
                "--output",
                "model.json",
                "--metric",
                r"step (?P<step>\d+) loss (?P<loss>\S+)",
                "--",
                *command,
            ],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        del recorded
        replay = [sys.executable, "-m", "ledger", "replay", "bench"]
        cases = [("bare", command, env), ("replay", replay, env)]
        _timed(replay, project, env)  # warm: the bytecode of the replay's modules
        if base is not None:
            cases.append(("baseline", replay, {**env, "PYTHONPATH": str(base[1])}))
            _timed(replay, project, cases[-1][2])  # its bytecode cached, as for this checkout
        times: dict[str, list[float]] = {key: [] for key, _, _ in cases}
        sides = {key: partial(_timed, argv, project, e) for key, argv, e in cases}
        # In an order that turns, each after a sync (``bench.in_turn``): a replay rebuilds a
        # workspace and seals a run with fsyncs, which a fixed order left to the next side.
        for r in range(reps):
            for key, seconds in in_turn(r, sides).items():
                times[key].append(seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bare_s = statistics.median(times["bare"])
    rep_s = statistics.median(times["replay"])
    over = rep_s - bare_s
    note = (
        f"a {steps}-step command ({steps} × {pause} s pauses plus a little compute) that prints a "
        "loss per step and writes model.json; recorded once with `--metric` and `--output`, then "
        f"median of {reps} runs of the bare command and of `ledger replay`, in an order that "
        "turns, each after a `sync` "
        "(bitwise mode: the verdict compares the loss series and the output)"
    )
    return [
        Row(NAME, "the command, bare", bare_s, "s", note=note),
        Row(
            NAME,
            "`ledger replay` of its recorded run",
            rep_s,
            "s",
            "the command, bare",
            rep_s / bare_s,
        ),
        Row(NAME, "replay overhead (difference)", over, "s", "", None, "≤ +1.0 s", over <= 1.0),
        *(
            [
                Row(
                    NAME,
                    f"replay overhead at {base[0]} (before), same run",
                    statistics.median(times["baseline"]) - bare_s,
                    "s",
                    "overhead now",
                    (statistics.median(times["baseline"]) - bare_s) / over if over > 0 else None,
                    note="bytecode cached for both (PYTHONPYCACHEPREFIX), as an installed package",
                )
            ]
            if base is not None
            else []
        ),
    ]
