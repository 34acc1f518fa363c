"""`--seed-arg` reaches script-style programs: a seed left to its default is appended as one
`--seed=N` word, the form their `--key=value` configurators read (nanoGPT's refuses `--seed N`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Module-level globals overridden by --key=value arguments, as nanoGPT's configurator does.
CONFIGURATOR = """
import random, sys
seed = 1337
batch_size = 8
for arg in sys.argv[1:]:
    assert arg.startswith("--") and "=" in arg, f"not an option with a value: {arg}"
    name, val = arg[2:].split("=", 1)
    assert name in globals(), f"unknown config {name}"
    globals()[name] = int(val)
print(f"epoch 0 acc {0.9 + random.Random(seed).gauss(0, 0.01)!r}")
"""


def test_a_configurator_program_takes_its_seed(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(CONFIGURATOR)
    init_ledger(proj)
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "train.py",
        "--batch_size=4", cwd=proj,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "3", "--seed-arg", "--seed", "--json",
        cwd=proj,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    assert "not an option with a value" not in r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["mode"] == "seeds" and len(verdict["replays"]) == 3
    seeds = []
    for replay_id in verdict["replays"]:
        shown = json.loads(run_ledger("show", replay_id, "--json", cwd=proj).stdout)
        argv = shown["contract"]["argv"]
        assert argv[:-1] == [sys.executable, "train.py", "--batch_size=4"], argv
        assert argv[-1].startswith("--seed="), argv
        seeds.append(argv[-1])
        assert shown["run"]["status"] == "succeeded"
    assert len(set(seeds)) == 3
