"""``ledger replay --mode seeds --seed-values 11,12,13``: the seeds replayed are the ones given,
not drawn at random, so the same command gives the same verdict again; the verdict records them;
seeds that cannot stand for new draws of the original are refused before anything runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# The metric depends on the seed on the command line only: the same seeds, the same values.
BY_ARG = """
import argparse, math
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=0)
a = p.parse_args()
print(f"epoch 0 acc {0.9 + 0.01 * math.sin(a.seed)!r}")
"""
# The metric depends on the root ledger.seed() resolves (LEDGER_SEED_ROOT in a replay).
BY_ROOT = """
import ledger, math
s = ledger.seed(5)
print(f"epoch 0 acc {0.9 + 0.01 * math.sin(s.root % 1000)!r}")
"""


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seed-values")
    (root / "by_arg.py").write_text(BY_ARG)
    (root / "by_root.py").write_text(BY_ROOT)
    init_ledger(root)
    return root


def _record(proj: Path, *argv: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", "--", sys.executable, *argv, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


@pytest.fixture(scope="module")
def by_arg(proj: Path) -> str:
    return _record(proj, "by_arg.py", "--seed", "1")


@pytest.fixture(scope="module")
def by_root(proj: Path) -> str:
    return _record(proj, "by_root.py")


@pytest.fixture(scope="module")
def by_default(proj: Path) -> str:
    return _record(proj, "by_arg.py")  # --seed left to argparse's default, 0


def _verdicts(proj: Path) -> list[Path]:
    return sorted(p for p in (proj / ".ledger" / "refs" / "verdicts").rglob("*") if p.is_file())


def _runs(proj: Path) -> int:
    return len(run_ledger("ls", "--json", cwd=proj).stdout.strip().splitlines())


def _replay_json(proj: Path, run_id: str, *args: str, codes: tuple[int, ...] = (0,)) -> dict:  # type: ignore[type-arg]
    r = run_ledger("replay", run_id, "--mode", "seeds", "--json", *args, cwd=proj)
    assert r.returncode in codes, r.stdout + r.stderr
    return dict(json.loads(r.stdout[r.stdout.index("{\n") :]))


def _argv_of(proj: Path, run_id: str) -> list[str]:
    r = run_ledger("show", run_id, "--json", cwd=proj)
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout)["contract"]["argv"])


def test_the_given_seeds_are_the_seeds_replayed_and_the_verdict_repeats(
    proj: Path, by_arg: str
) -> None:
    args = ("--seed-values", "2,3,4", "--metric", "acc", "--seed-arg", "--seed")
    first = _replay_json(proj, by_arg, *args)  # --seeds left out: one seed per value
    assert first["settings"]["seeds"] == 3
    assert first["settings"]["seed_values"] == [2, 3, 4]
    assert first["settings"]["roots"] == [2, 3, 4]
    seeds = sorted(_argv_of(proj, r)[-1] for r in first["replays"])
    assert seeds == ["2", "3", "4"]  # each replay's command line carries its given seed
    again = _replay_json(proj, by_arg, "--seeds", "3", *args)
    assert again["replays"] != first["replays"]
    assert (again["outcome"], again["summary"]) == (first["outcome"], first["summary"])
    assert first["outcome"] == "reproduced", first["summary"]


def test_drawn_seeds_say_so(proj: Path, by_arg: str) -> None:
    # Two seeds drawn at random: the original may fall outside their prediction interval
    # (inconclusive, exit 1; round 14's coverage pass met it): only what was drawn is checked.
    args = ("--seeds", "2", "--metric", "acc", "--seed-arg", "--seed")
    v = _replay_json(proj, by_arg, *args, codes=(0, 1))
    assert v["settings"]["seed_values"] is None and len(v["settings"]["roots"]) == 2


def test_given_roots_reach_ledger_seed(proj: Path, by_root: str) -> None:
    v = _replay_json(proj, by_root, "--seed-values", "7,8", "--metric", "acc")
    assert v["settings"]["roots"] == [7, 8]
    roots = []
    for run_id in v["replays"]:
        shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
        roots += [s["root"] for s in shown["run"]["runtime"]["seeds"]]
    assert sorted(roots) == [7, 8]


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("by_arg", ["--seed-values", "2,3,3"], "--seed-values repeats 3"),
        ("by_arg", ["--seeds", "3", "--seed-values", "2,3"], "gives 2 seed(s) for --seeds 3"),
        ("by_arg", ["--seeds", "2", "--seed-values", "2,3,4"], "gives 3 seed(s) for --seeds 2"),
        ("by_arg", ["--seed-values", "2,x"], "'2,x' is not a comma-separated list of integers"),
        ("by_arg", ["--seed-values", "2,,3"], "is not a comma-separated list of integers"),
        ("by_arg", ["--seed-values", "-1,2"], "-1 is out of range"),
        ("by_arg", ["--seed-values", "2,2147483648"], "2147483648 is out of range"),
        ("by_root", ["--seed-values", "2,9223372036854775808"], "is out of range"),
        # the original ran with --seed 1: its "replay" would be the original again
        ("by_arg", ["--seed-values", "3,1,2"], "1 is the original's own seed (--seed 1, on"),
        ("by_default", ["--seed-values", "0,2"], "0 is the original's own seed (--seed 0, its"),
        ("by_root", ["--seed-values", "6,5"], "5 is the original's own seed (root 5)"),
    ],
)
def test_seeds_that_are_not_new_draws_are_refused(
    proj: Path,
    request: pytest.FixtureRequest,
    script: str,
    args: list[str],
    message: str,
) -> None:
    run_id = request.getfixturevalue(script)
    seed_arg = [] if script == "by_root" else ["--seed-arg", "--seed"]
    verdicts, runs = _verdicts(proj), _runs(proj)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--metric", "acc", *seed_arg, *args, cwd=proj
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert (_verdicts(proj), _runs(proj)) == (verdicts, runs)  # nothing ran, nothing stored


def test_seed_values_need_seeds_mode(proj: Path, by_arg: str) -> None:
    r = run_ledger("replay", by_arg, "--seed-values", "2,3", cwd=proj)
    assert r.returncode == 2 and "--seed-values is for seeds mode" in r.stderr, r.stderr
