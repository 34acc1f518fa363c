"""A Hydra program given its seed through `--seed-arg` (``replay/seed_effect.py``): the seed is
taken when the job config holds it (`seed=N`; Hydra's own argument parser sees only the
override `seed=N`, never N alone), and missed when Hydra accepts the override but the job never
sees it (`hydra.job.name=N`): then the replay stops at the first seed instead of comparing runs
of one seed. Real Hydra app, real `ledger record` and `ledger replay --mode seeds`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _support import init_ledger, require_module, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

APP = """
import random
import hydra
from omegaconf import DictConfig

@hydra.main(version_base=None, config_path=".", config_name="conf")
def main(cfg: DictConfig) -> None:
    print(f"epoch 0 acc {random.Random(cfg.seed).random()!r}")

if __name__ == "__main__":
    main()
"""


# Its own argument parser first (a data seed), the rest of the command line left to Hydra.
ARGS_THEN_HYDRA = """
import argparse, random, sys
import hydra
from omegaconf import DictConfig

p = argparse.ArgumentParser()
p.add_argument("--data-seed", type=int, default=1)
args, rest = p.parse_known_args()
sys.argv = [sys.argv[0], *rest]

@hydra.main(version_base=None, config_path=".", config_name="conf")
def main(cfg: DictConfig) -> None:
    print(f"epoch 0 acc {random.Random(cfg.seed + args.data_seed).random()!r}")

if __name__ == "__main__":
    main()
"""


def _recorded(tmp_path: Path, conf: str = "seed: 1\nlr: 0.1\n", app: str = APP) -> tuple[Path, str]:
    require_module("hydra")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "app.py").write_text(app)
    (proj / "conf.yaml").write_text(conf)
    init_ledger(proj)
    r = run_ledger("record", "--metric", METRIC, "--json", "--", sys.executable, "app.py", cwd=proj)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    assert shown["resolved_config"]["hydra"], "the job config was not captured"
    return proj, run_id


def test_a_seed_the_hydra_job_config_holds_is_taken(tmp_path: Path) -> None:
    proj, run_id = _recorded(tmp_path)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--seed-arg", "seed", "--json",
        cwd=proj,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["mode"] == "seeds" and len(verdict["replays"]) == 2


def test_a_hydra_override_the_job_config_does_not_hold_is_a_missed_seed(tmp_path: Path) -> None:
    proj, run_id = _recorded(tmp_path)
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--seed-arg", "hydra.job.name",
        cwd=proj,
    )  # fmt: skip
    assert r.returncode == 7, r.stdout + r.stderr
    told = (
        "seeds mode: the seed never reached 1 of 1 replay(s) (the script's argument parser "
        "never took the seed given with hydra.job.name)"
    )
    assert told in r.stderr, r.stderr
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()


def test_a_hydra_seed_key_is_named_when_the_seed_cannot_vary(tmp_path: Path) -> None:
    proj, run_id = _recorded(tmp_path)
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "no replay was run" in r.stderr, r.stderr
    hint = (
        "ledger: hint: its command line takes a seed: replay with --seed-arg seed, or call "
        "ledger.seed() in the script\n"
    )
    assert hint in r.stderr, r.stderr


def test_every_seed_key_of_a_nested_hydra_config_is_named(tmp_path: Path) -> None:
    """A seed key, then a config group with a seed of its own (the captured config is stored
    with its keys sorted): both are named, in that order. A key found before a group was once
    lost when the group was read."""
    proj, run_id = _recorded(tmp_path, "seed: 1\ntrainer:\n  seed: 2\n  width: 8\n")
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    hint = (
        "ledger: hint: its command line takes a seed: replay with --seed-arg seed (seed "
        "parameters found: seed, trainer.seed), or call ledger.seed() in the script\n"
    )
    assert hint in r.stderr, r.stderr


def test_the_seeds_of_an_argument_parser_and_of_hydra_are_both_named(tmp_path: Path) -> None:
    """A script that parses --data-seed itself and hands the rest to Hydra: its parser's seed
    option and the Hydra job config's seed key are both seed parameters, the parser's first."""
    proj, run_id = _recorded(tmp_path, app=ARGS_THEN_HYDRA)
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "2", cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    hint = (
        "ledger: hint: its command line takes a seed: replay with --seed-arg --data-seed (seed "
        "parameters found: --data-seed, seed), or call ledger.seed() in the script\n"
    )
    assert hint in r.stderr, r.stderr
