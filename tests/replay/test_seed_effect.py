"""Seeds mode refuses seeds that did not vary the runs, and puts a defaulted seed on argv."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.replay.seed_effect import with_seed_arg

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# --seed is an argparse default: absent from the recorded argv.
ARG_DEFAULT = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
p.add_argument("--lr", type=float, default=0.1)
a = p.parse_args()
print(f"epoch 0 acc {0.9 + random.Random(a.seed).gauss(0, 0.01)!r}")
"""
# Parses --seed, then ignores it.
ARG_UNUSED = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
p.parse_args()
print(f"epoch 0 acc {0.9 + random.Random(7).gauss(0, 0.01)!r}")
"""
# Reads no argument and no LEDGER_SEED_ROOT: fixed seed.
FIXED = """
import random
print(f"epoch 0 acc {0.9 + random.Random(3).gauss(0, 0.01)!r}")
"""
# Unseeded: values vary, but not because of the seed it was given.
UNSEEDED = """
import random
print(f"epoch 0 acc {0.9 + random.SystemRandom().gauss(0, 0.01)!r}")
"""
# Its parser leaves --seed over (parse_known_args); values vary, but not by the seed.
ARG_IGNORED = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--lr", type=float, default=0.1)
p.parse_known_args()
print(f"epoch 0 acc {0.9 + random.SystemRandom().gauss(0, 0.01)!r}")
"""
# Takes the root from LEDGER_SEED_ROOT through ledger.seed().
LEDGER_SEED = """
import random, ledger
ledger.seed(1)
print(f"epoch 0 acc {0.9 + random.gauss(0, 0.01)!r}")
"""
# Seed 12 ends (exit 3) before it reads its seed, printing no metric; the others take theirs.
FAILS_FIRST = """
import math, os, sys
if os.environ.get("LEDGER_SEED_ROOT") == "12":
    sys.exit(3)
import ledger
s = ledger.seed(5)
print(f"epoch 0 acc {0.9 + 0.01 * math.sin(s.root % 1000)!r}")
"""
# Seed 12 logs its metric, then exits 3 (the original, seed 5, exits 0).
FAILS_AFTER = """
import math, sys
import ledger
s = ledger.seed(5)
print(f"epoch 0 acc {0.9 + 0.01 * math.sin(s.root % 1000)!r}")
if s.root == 12:
    sys.exit(3)
"""
# Seed 12 exits 0 without logging its metric.
SILENT = """
import math
import ledger
s = ledger.seed(5)
if s.root != 12:
    print(f"epoch 0 acc {0.9 + 0.01 * math.sin(s.root % 1000)!r}")
"""
# Takes the seed, but the metric does not depend on it.
CONSTANT_METRIC = """
import random, ledger
ledger.seed(1)
random.random()
print("epoch 0 acc 1.0")
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in (
        ("arg_default", ARG_DEFAULT),
        ("arg_unused", ARG_UNUSED),
        ("fixed", FIXED),
        ("arg_ignored", ARG_IGNORED),
        ("unseeded", UNSEEDED),
        ("ledger_seed", LEDGER_SEED),
        ("constant", CONSTANT_METRIC),
        ("fails_first", FAILS_FIRST),
        ("fails_after", FAILS_AFTER),
        ("silent", SILENT),
    ):
        (root / f"{name}.py").write_text(text)
    init_ledger(root)
    return root


def _record(proj: Path, script: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", "--", sys.executable, script, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _verdicts(proj: Path) -> list[Path]:
    return sorted(p for p in (proj / ".ledger" / "refs" / "verdicts").rglob("*") if p.is_file())


def _seeds(proj: Path, run_id: str, *args: str, jobs: int = 3) -> tuple[int, str, str]:
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "3", "--jobs", str(jobs), *args, cwd=proj
    )
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        # Known before any replay: the original never read the ledger seed, no --seed-arg.
        ("fixed", [], "the seed cannot vary: run "),
        ("unseeded", [], "never read the ledger seed (no ledger.seed()"),
        ("arg_default", [], "no --seed-arg was given"),
        # Known only from the replays: the first two agree exactly, or one missed its seed.
        ("fixed", ["--seed-arg", "--seed"], "the first two replayed seeds gave identical"),
        ("arg_unused", ["--seed-arg", "--seed"], "the seed had no effect"),
        ("arg_ignored", ["--seed-arg", "--seed"], "parser never took the seed given with --seed"),
        ("constant", [], "gave identical results (acc = 1.0, and all 1 metric values"),
    ],
)
def test_seeds_that_did_not_vary_get_no_verdict(
    proj: Path, script: str, args: list[str], message: str
) -> None:
    run_id = _record(proj, f"{script}.py")
    # One at a time: a seed stopped early would print the program's own KeyboardInterrupt.
    code, out, err = _seeds(proj, run_id, *args, jobs=1)
    assert code == 7, out + err
    assert "ledger: error: seeds mode: " in err and message in err, err
    assert "ledger: hint: " in err and "Traceback" not in err
    assert "REPRODUCED" not in out and "verdict record" not in out
    assert _verdicts(proj) == []


def test_seed_arg_is_appended_when_the_seed_is_a_default(proj: Path) -> None:
    run_id = _record(proj, "arg_default.py")
    code, out, err = _seeds(proj, run_id, "--seed-arg", "--seed", "--json")
    assert code in (0, 1), out + err
    verdict = json.loads(out[out.index("{\n") :])
    assert verdict["mode"] == "seeds" and len(verdict["replays"]) == 3
    seeds = []
    for replay_id in verdict["replays"]:
        shown = json.loads(run_ledger("show", replay_id, "--json", cwd=proj).stdout)
        argv = shown["contract"]["argv"]
        assert argv[:-1] == [sys.executable, "arg_default.py"]
        assert argv[-1].startswith("--seed=")
        seeds.append(int(argv[-1].partition("=")[2]))
        assert shown["resolved_config"]["resolved"]["seed"] == seeds[-1]
    assert len(set(seeds)) == 3
    assert (
        verdict["settings"]["roots"] and [r % 2**31 for r in verdict["settings"]["roots"]] == seeds
    )


def test_ledger_seed_takes_the_root_and_gets_a_verdict(proj: Path) -> None:
    run_id = _record(proj, "ledger_seed.py")
    code, out, err = _seeds(proj, run_id, "--json")
    assert code in (0, 1), out + err
    verdict = json.loads(out[out.index("{\n") :])
    assert verdict["outcome"] in ("reproduced", "not-reproduced", "inconclusive")
    assert len(_verdicts(proj)) == 1


@pytest.mark.parametrize(
    ("argv", "flag", "expected"),
    [
        (
            ["p", "t.py", "--seed", "1", "--lr", "2"],
            "--seed",
            ["p", "t.py", "--seed", "9", "--lr", "2"],
        ),
        (["p", "t.py", "--seed=1"], "--seed", ["p", "t.py", "--seed=9"]),
        (["p", "t.py", "--lr", "2"], "--seed", ["p", "t.py", "--lr", "2", "--seed=9"]),
        (["p", "t.py", "--lr=2"], "-s", ["p", "t.py", "--lr=2", "-s", "9"]),
        # the seed is the last argument: replaced, not given twice
        (["p", "t.py", "--seed", "1"], "--seed", ["p", "t.py", "--seed", "9"]),
        (["p", "t.py", "seed=1"], "seed", ["p", "t.py", "seed=9"]),
        (["p", "t.py", "lr=2"], "seed", ["p", "t.py", "lr=2", "seed=9"]),
        (["p", "t.py", "--seed"], "--seed", ["p", "t.py", "--seed", "--seed=9"]),
    ],
)
def test_with_seed_arg(argv: list[str], flag: str, expected: list[str]) -> None:
    assert with_seed_arg(argv, flag, "9") == expected


def test_a_replay_that_failed_before_reading_its_seed_is_not_a_missed_seed(proj: Path) -> None:
    """Seed 12's replay exits 3 before ledger.seed(): a failed replay with no value, not one
    that ran with the wrong seed. The verdict rests on the two that produced a value, and the
    seeds are not refused as "never reached"."""
    run_id = _record(proj, "fails_first.py")
    code, out, err = _seeds(proj, run_id, "--seed-values", "11,12,13", "--json", jobs=1)
    assert code in (0, 1), out + err
    assert "the seed never reached" not in err, err
    verdict = json.loads(out[out.index("{\n") :])
    assert verdict["mode"] == "seeds" and len(_verdicts(proj)) == 1


@pytest.mark.parametrize(
    ("script", "ended"),
    [
        ("fails_first.py", "ended failed (exit 3) with no value of acc"),
        ("fails_after.py", "ended failed (exit 3) with acc = "),
        ("silent.py", "ended succeeded (exit 0) with no value of acc"),
    ],
)
def test_a_seed_whose_replay_ends_otherwise_than_the_original_is_not_reproduced(
    proj: Path, script: str, ended: str
) -> None:
    """Seed 12 of three fails where the original succeeded, or logs no metric: the program
    does not reproduce under that seed. The verdict says so and names the seed; it never
    rests, as REPRODUCED, on the two seeds left (which agree here)."""
    run_id = _record(proj, script)
    code, out, err = _seeds(proj, run_id, "--seed-values", "11,12,13", "--json", jobs=1)
    verdict = json.loads(out[out.index("{\n") :])
    assert verdict["outcome"] == "not-reproduced", verdict["summary"]
    assert code == 1, out + err
    assert verdict["summary"].startswith(
        "1 of 3 replayed seeds did not end as the original did (succeeded, exit 0, acc logged)"
    )
    (note,) = [n for n in verdict["notes"] if n.startswith("seed 12: replay ")]
    assert ended in note and "the original ended succeeded (exit 0)" in note, note
    assert not any(n.startswith(("seed 11:", "seed 13:")) for n in verdict["notes"])
