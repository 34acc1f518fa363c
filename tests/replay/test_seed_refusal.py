"""Seeds mode decides before it spends: a program whose seed cannot vary is refused before any
replay runs, with the hint that fits it; otherwise it stops after two replays that agree."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Every training run leaves a line in the file named by TRAINED: the cost a replay would pay.
TRAIN = 'import os\nopen(os.environ["TRAINED"], "a").write("trained\\n")\n'
# No seed at all: nothing a replay is given can reach it.
NO_SEED = (
    TRAIN
    + """
import random
print(f"epoch 0 acc {0.9 + random.Random(3).gauss(0, 0.01)!r}")
"""
)
# A seed option, left to its default, and no ledger.seed(): --seed-arg would reach it.
SEED_OPTION = (
    TRAIN
    + """
import argparse, random
p = argparse.ArgumentParser()
p.add_argument("--random-seed", type=int, default=1)
p.add_argument("--lr", type=float, default=0.1)
a = p.parse_args()
print(f"epoch 0 acc {0.9 + random.Random(a.random_seed).gauss(0, 0.01)!r}")
"""
)
# A strict parser without a seed option: --seed-arg --seed would only make it exit 2.
NO_SEED_OPTION = (
    TRAIN
    + """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--lr", type=float, default=0.1)
p.parse_args()
print(f"epoch 0 acc {0.9 + random.Random(3).gauss(0, 0.01)!r}")
"""
)
# Parses --seed and ignores it: only replays can show that.
IGNORES_SEED = (
    TRAIN
    + """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
p.parse_args()
for step in range(3):
    print(f"epoch {step} acc {0.9 + random.Random(step).gauss(0, 0.01)!r}")
"""
)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in (
        ("no_seed", NO_SEED),
        ("seed_option", SEED_OPTION),
        ("no_seed_option", NO_SEED_OPTION),
        ("ignores_seed", IGNORES_SEED),
    ):
        (root / f"{name}.py").write_text(text)
    init_ledger(root)
    return root


def _record(proj: Path, script: str, trained: Path) -> str:
    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, script,
        cwd=proj, TRAINED=str(trained),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert trained.read_text() == "trained\n"
    trained.unlink()  # from here on, a line in it is a replay that ran
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _runs(proj: Path) -> list[str]:
    """Every run recorded, by its ref (the truth), and the index agrees (`ledger ls`)."""
    refs = sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir())
    listed = json.loads(run_ledger("ls", "--replays", "--json", cwd=proj).stdout)
    assert sorted(row["run_id"] for row in listed) == refs
    return refs


def _seeds(proj: Path, run_id: str, trained: Path, *args: str) -> tuple[int, str]:
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "5", *args, cwd=proj,
        TRAINED=str(trained),
    )  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("script", "args", "message", "hint"),
    [
        (
            "no_seed",
            [],
            "never read the ledger seed (no ledger.seed() or ledger.current_seeds() call) "
            "and no --seed-arg was given",
            "the program has no seed parameter that ledger found",
        ),
        (
            "seed_option",
            [],
            "never read the ledger seed",
            "its command line takes a seed: replay with --seed-arg --random-seed",
        ),
        (
            "no_seed_option",
            ["--seed-arg", "--seed"],
            "the script's argument parser has no --seed option (it took: lr)",
            "give the script a seed option, or call ledger.seed() in it",
        ),
    ],
)
def test_a_seed_that_cannot_vary_is_refused_before_any_replay(
    proj: Path, tmp_path: Path, script: str, args: list[str], message: str, hint: str
) -> None:
    trained = tmp_path / "trained.txt"
    run_id = _record(proj, f"{script}.py", trained)
    code, text = _seeds(proj, run_id, trained, *args)
    assert code == 7, text
    assert "ledger: error: seeds mode: " in text and message in text, text
    assert "no replay was run" in text and f"ledger: hint: {hint}" in text, text
    assert not trained.exists(), "a replay trained before the refusal"
    assert _runs(proj) == [run_id], "a replay run was recorded"
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()


def test_two_replays_that_agree_exactly_stop_the_rest(proj: Path, tmp_path: Path) -> None:
    trained = tmp_path / "trained.txt"
    run_id = _record(proj, "ignores_seed.py", trained)
    code, text = _seeds(proj, run_id, trained, "--seed-arg", "--seed", "--jobs", "1")
    assert code == 7, text
    assert "the first two replayed seeds gave identical results" in text, text
    assert (
        "all 3 metric values bit for bit" in text
        and "the other 3 seed(s) were stopped or not started" in text
    )
    assert trained.read_text() == "trained\n" * 2, "seeds ran after two agreed"
    assert len(_runs(proj)) == 3  # the original and two replays
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()
