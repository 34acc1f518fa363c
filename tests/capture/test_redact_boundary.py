"""One redaction at the store boundary (ledger.capture.boundary): a secret known at launch is
replaced the same way in every stored copy of the command line and of the values it set,
whichever capture stored it (contract argv, argparse namespace, Hydra-free config record,
environment fingerprint, env_vars)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import start_ledger

from ledger.capture.boundary import for_store
from ledger.capture.secrets import KnownSecret, Scrubber
from ledger.records.contract import Contract
from ledger.run.find import load_run
from ledger.store import Store

# A value no name or format rule recognises: only knowing it (from $RUN_SERVICE_TOKEN) finds it.
VALUE = "plain-5e1f0c9a7b"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text(
        textwrap.dedent(
            """\
            import argparse
            p = argparse.ArgumentParser()
            p.add_argument("--note")
            p.add_argument("--lr", type=float)
            print(p.parse_args().lr)
            """
        )
    )
    (repo / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    assert start_ledger("init", cwd=repo).returncode == 0
    return repo


def test_a_known_secret_is_gone_from_every_stored_copy_of_the_command_line(project: Path) -> None:
    r = start_ledger(
        "record",
        "--json",
        "--env",
        "RUN_SERVICE_TOKEN",
        "--",
        sys.executable,
        "train.py",
        "--note",
        VALUE,
        "--lr",
        "0.5",
        cwd=project,
        RUN_SERVICE_TOKEN=VALUE,
    )
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    store = Store.open(project / ".ledger")
    _, run = load_run(store, run_id)
    contract = Contract.model_validate(store.get_json(run.contract))
    config = store.get_json(run.resolved_config)
    environment = store.get_json(contract.environment)
    marker = "[REDACTED:RUN_SERVICE_TOKEN]"
    assert contract.argv[-4:] == ["--note", marker, "--lr", "0.5"]
    (parsed,) = config["argparse"]
    assert parsed["namespace"] == {"note": marker, "lr": 0.5}  # the value the child parsed
    assert parsed["argv"] == ["--note", marker, "--lr", "0.5"]
    assert config["argv"] == contract.argv
    assert contract.env_vars["RUN_SERVICE_TOKEN"] == "***redacted***"
    stored = json.dumps([contract.model_dump(mode="json"), config, environment])
    assert VALUE not in stored


def test_each_kind_takes_known_values_and_rules_in_one_order() -> None:
    scrubber = Scrubber([KnownSecret("HF_HOME_KEY", VALUE)])
    # argv: known values first, so the marker (which replay restores) survives the rules.
    assert for_store("argv", ["--api-key", VALUE, "x"], scrubber) == [
        "--api-key",
        "[REDACTED:HF_HOME_KEY]",
        "x",
    ]
    # variables and JSON: a value under a secret name is gone whatever it was; known values
    # elsewhere become markers.
    assert for_store("env", {"DB_PASSWORD": VALUE, "NOTE": VALUE}, scrubber) == {
        "DB_PASSWORD": "***redacted***",
        "NOTE": "[REDACTED:HF_HOME_KEY]",
    }
    assert for_store("json", {"token": VALUE, "n": [VALUE, 1]}, scrubber) == {
        "token": "***redacted***",
        "n": ["[REDACTED:HF_HOME_KEY]", 1],
    }
    assert for_store("argv", ["--password", "p4ss-word-x"]) == ["--password", "***redacted***"]
