"""What one replay runs with (``replay/single.py``): the recorded environment variables again,
except those stored redacted, whose current value is taken; the recorded command line,
whatever ``--seed-arg`` says outside seeds mode; and the inputs as the original left them (a
replay stores none). Real `ledger record` and `ledger replay`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger._hashing import hash_file
from ledger.store import Store

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

TOKEN = "s3cr3t-Value-9137"

# acc sums the characters of what the program sees: the token (under a secret-looking name,
# stored as ***redacted***), the connection string that holds it (stored with a
# [REDACTED:SERVICE_TOKEN] marker) and MODE. (The script names no secret: a line of code
# holding one is redacted in the code snapshot too.)
USES_ENV = """
import os
seen = "|".join(os.environ[k] for k in ("SERVICE_TOKEN", "CONN", "MODE"))
print("epoch 0 acc", float(sum(map(ord, seen))))
"""

# Reads the input named on its command line.
READS = """
import sys
data = open(sys.argv[1], "rb").read()
print("epoch 0 acc", float(len(data)))
"""

# Its seed comes from --seed (argparse).
SEEDED = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
print(f"epoch 0 acc {random.Random(a.seed).random()!r}")
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "uses_env.py").write_text(USES_ENV)
    (root / "seeded.py").write_text(SEEDED)
    (root / "reads.py").write_text(READS)
    init_ledger(root)
    return root


def _record(proj: Path, *argv: str, **env: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", *argv, cwd=proj, **env)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(proj: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, object]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=proj, **env)
    assert "{\n" in r.stdout, r.stdout + r.stderr
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


def test_a_redacted_variable_is_taken_from_the_environment_again(proj: Path) -> None:
    env = {"SERVICE_TOKEN": TOKEN, "CONN": "user:" + TOKEN, "MODE": "a"}
    names = ("--env", "SERVICE_TOKEN", "--env", "CONN", "--env", "MODE")
    run_id = _record(proj, *names, "--", sys.executable, "uses_env.py", **env)
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    stored = shown["contract"]["env_vars"]
    # Both forms of redaction are staged: the secret name's value, the known value inside
    # another variable; the plain one is kept as it was.
    assert TOKEN not in json.dumps(stored)
    assert "***" in stored["SERVICE_TOKEN"], stored
    assert "[REDACTED:" in stored["CONN"], stored
    assert stored["MODE"] == "a"

    # The secrets as they are now (the same); MODE changed since: the recorded value is set.
    code, verdict = _replay(proj, run_id, **{**env, "MODE": "b"})
    assert verdict["outcome"] == "reproduced", verdict["summary"]
    assert code == 0 and verdict["metrics"]["mismatches"] == 0  # type: ignore[index]


def test_seed_arg_outside_seeds_mode_replays_the_recorded_command(proj: Path) -> None:
    run_id = _record(proj, "--", sys.executable, "seeded.py", "--seed", "5")
    code, verdict = _replay(proj, run_id, "--seed-arg", "--seed")
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    (replay_id,) = verdict["replays"]  # type: ignore[misc]
    shown = json.loads(run_ledger("show", replay_id, "--json", cwd=proj).stdout)
    assert shown["contract"]["argv"][-2:] == ["--seed", "5"]


def test_an_input_left_out_of_the_store_is_not_stored_by_its_replay(
    proj: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data" / "big.bin"  # outside the project: checked in place on replay
    data.parent.mkdir()
    data.write_bytes(b"x" * 100_000)
    argv = ("--input", str(data), "--no-store-inputs", "--", sys.executable, "reads.py", str(data))
    run_id = _record(proj, *argv)
    store = Store.open(proj / ".ledger")
    oid = hash_file(data)
    assert not store.objects.has(oid)
    code, verdict = _replay(proj, run_id)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    assert any("used in place" in n for n in verdict["notes"]), verdict["notes"]  # type: ignore[union-attr]
    assert not store.objects.has(oid), "the replay copied the input into the ledger"
