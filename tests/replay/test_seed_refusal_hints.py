"""A seeds replay refused before any replay runs says exactly what this program offers
(``replay/seed_effect.py``): each seed option of its argument parser as the recorded command
line spells it, a seed key of the config file it read, or the options a strict parser took.
Real `ledger record` and `ledger replay --mode seeds`; each refusal costs no replay."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Two seed options, an int option not named like a seed, and a flag named like one (a bool:
# no seed value). The data seed is spelled with an underscore on the recorded command line.
TWO_SEEDS = """
import argparse, random
p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--data-seed", "--data_seed", dest="data_seed", type=int, default=1)
p.add_argument("--seed-everything", action="store_true")
a = p.parse_args()
print(f"epoch 0 acc {random.Random(a.seed).random()!r}")
"""
# One seed option, left to its default.
ONE_SEED = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--random-seed", type=int, default=1)
a = p.parse_args()
print(f"epoch 0 acc {random.Random(a.random_seed).random()!r}")
"""
# A strict parser that takes thirteen options, none of them --seed.
MANY_OPTIONS = (
    "import argparse\np = argparse.ArgumentParser()\n"
    + "".join(f'p.add_argument("--{c}", type=int, default=0)\n' for c in "abcdefghijklm")
    + 'p.parse_args()\nprint("epoch 0 acc 0.5")\n'
)
# A strict parser with no options at all.
NO_OPTIONS = """
import argparse
argparse.ArgumentParser().parse_args()
print("epoch 0 acc 0.5")
"""
# Its settings come from a config file (recorded with --config): a seed at the top, and one
# nested.
CONFIG_FILE = """
import json, random, sys
cfg = json.load(open(sys.argv[1]))
print(f"epoch 0 acc {random.Random(cfg['seed']).random()!r}")
"""

# Two argument parsers, each with a seed option: the script's own, then one for the rest.
TWO_PARSERS = """
import argparse
first = argparse.ArgumentParser()
first.add_argument("--seed", type=int, default=1)
_, rest = first.parse_known_args()
second = argparse.ArgumentParser()
second.add_argument("--data-seed", type=int, default=2)
second.parse_args(rest)
print("epoch 0 acc 0.5")
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in (
        ("two_seeds", TWO_SEEDS),
        ("one_seed", ONE_SEED),
        ("many_options", MANY_OPTIONS),
        ("no_options", NO_OPTIONS),
        ("config_file", CONFIG_FILE),
        ("two_parsers", TWO_PARSERS),
    ):
        (root / f"{name}.py").write_text(text)
    (root / "config.json").write_text(json.dumps({"seed": 3, "model": {"seed": 4, "width": 8}}))
    init_ledger(root)
    return root


def _refused(
    proj: Path, argv: list[str], *replay_args: str, record: tuple[str, ...] = ()
) -> tuple[str, str]:
    """(error, hint) of a seeds replay refused before any replay ran."""
    r = run_ledger(
        "record", "--metric", METRIC, "--json", *record, "--", sys.executable, *argv, cwd=proj
    )
    assert r.returncode == 0, r.stderr
    run_id = str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "3", *replay_args, cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "no replay was run" in r.stderr, r.stderr
    assert sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir()) == [run_id]
    lines = r.stderr.splitlines()
    error = next(x for x in lines if x.startswith("ledger: error: "))
    hint = next(x for x in lines if x.startswith("ledger: hint: "))
    return error, hint.removeprefix("ledger: hint: ")


def test_every_seed_option_is_named_as_the_command_line_spells_it(proj: Path) -> None:
    _, hint = _refused(proj, ["two_seeds.py", "--data_seed", "5"])
    assert hint == (
        "its command line takes a seed: replay with --seed-arg --data_seed (seed parameters "
        "found: --data_seed, --seed), or call ledger.seed() in the script"
    )


def test_the_seed_options_of_every_argument_parser_are_named(proj: Path) -> None:
    _, hint = _refused(proj, ["two_parsers.py"])
    assert hint == (
        "its command line takes a seed: replay with --seed-arg --seed (seed parameters "
        "found: --seed, --data-seed), or call ledger.seed() in the script"
    )


def test_one_seed_option_is_named_alone(proj: Path) -> None:
    _, hint = _refused(proj, ["one_seed.py"])
    assert hint == (
        "its command line takes a seed: replay with --seed-arg --random-seed, or call "
        "ledger.seed() in the script"
    )


def test_a_seed_key_of_the_config_file_read_is_named(proj: Path) -> None:
    _, hint = _refused(proj, ["config_file.py", "config.json"], record=("--config", "config.json"))
    # The top-level key, as a --key=value program would take it; not the nested one.
    assert hint == (
        "its command line takes a seed: replay with --seed-arg --seed, or call ledger.seed() "
        "in the script"
    )


def test_a_strict_parser_without_the_seed_option_names_a_seed_option_it_has(
    proj: Path,
) -> None:
    error, hint = _refused(proj, ["one_seed.py"], "--seed-arg", "--seed")
    assert "the script's argument parser has no --seed option (it took: random_seed)" in error
    assert hint == "replay with --seed-arg --random-seed"


def test_a_strict_parser_without_the_seed_option_names_its_first_seed_option(
    proj: Path,
) -> None:
    """Two seed options (--seed, --data-seed) and --seed-arg naming neither: the hint names
    the first of them in the order the refusal without --seed-arg lists them (the captured
    options are stored sorted), not the last."""
    error, hint = _refused(proj, ["two_seeds.py"], "--seed-arg", "--rng")
    assert "has no --rng option (it took: data_seed, epochs, seed, seed_everything)" in error
    assert hint == "replay with --seed-arg --data-seed"


@pytest.mark.parametrize(
    ("script", "took"),
    [("many_options", "a, b, c, d, e, f, g, h, i, j, k, l"), ("no_options", "nothing")],
)
def test_a_strict_parser_without_the_seed_option_lists_what_it_took(
    proj: Path, script: str, took: str
) -> None:
    error, hint = _refused(proj, [f"{script}.py"], "--seed-arg", "--seed")
    assert f"the script's argument parser has no --seed option (it took: {took}), so" in error
    assert hint == "give the script a seed option, or call ledger.seed() in it"


def test_a_config_capture_missing_from_the_store_is_read_as_none(proj: Path) -> None:
    """The run's parsed config (an object gc or a lost disk took) is read as nothing parsed:
    the refusal still names what to do, it does not fail on the missing object."""
    from ledger.store import Store

    r = run_ledger(
        "record", "--metric", METRIC, "--json", "--", sys.executable, "one_seed.py", cwd=proj
    )
    assert r.returncode == 0, r.stderr
    run_id = str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    Store.open(proj / ".ledger").objects.delete(shown["run"]["resolved_config"])
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "3", cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "the seed cannot vary" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "ledger: hint: the program has no seed parameter that ledger found" in r.stderr
