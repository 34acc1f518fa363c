"""One boundary for every stored string (issue 36, point 16): a real ``ledger record`` in a real
git repository with a secret planted in each place a string of the user reaches the store that
the rules once missed, then every stored byte, the index, ``ledger show`` and ``ledger ls`` are
searched for it.

The places: a config value the detector knows (a Slack webhook, a Twilio key) that was redacted
in the stored file but kept in the parsed value; a ``ya29.`` token under a ``bearer`` key, in a
TOML file and in a Hydra override; a secret in a hunk header of the patch (the enclosing line
git prints after ``@@``); the run's ``--name`` and ``--tag`` values; an untracked file, and a
tracked one, whose *name* is a token.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger
from capture.test_secret_corpus import git, new_repo, stored_bytes

from ledger.run.find import load_run
from ledger.store import Store

WEBHOOK = "https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/Qw8Er7Ty6Ui5Op4As3Df2Gh"
TWILIO = "SK" + "9f3c1a7e5b2d4086af1c3e5b7d9f2a4c"
TOML_BEARER = "ya29.a0AfH6SM" + "Bq7Wk2Lp9Xz4Tn8Rv3Ym6Hc1Jd5"
HYDRA_BEARER = "ya29.a0AfH6SM" + "Cz3Qn8Lr2Wp6Xk9Tv4Yb7Hd1Jm5"
HUNK = "sk-" + "hunkHeader7Qp2Xw9Lm4Zt6Rv8Nb3Kc"
NAME = "sk-" + "runName4Tq9Wx2Lp7Zm3Rv6Nb8Kc1Hd"
TAG = "ghp_" + "TagValue8Rs2Lq0Xv6Tn4Wm1Kb9Pz3Yc7H"
FILE_NAME = "ghp_" + "FileName3Rs2Lq0Xv6Tn4Wm1Kb9Pz3Yc7H"
TRACKED_NAME = "ghp_" + "Tracked5Rs2Lq0Xv6Tn4Wm1Kb9Pz3Yc7Hd"

SECRETS = {
    "config value the detector knows (webhook)": WEBHOOK,
    "config value the detector knows (Twilio)": TWILIO,
    "TOML bearer": TOML_BEARER,
    "Hydra override api.bearer=": HYDRA_BEARER,
    "hunk header": HUNK,
    "--name": NAME,
    "--tag key=value": TAG,
    "untracked file name": FILE_NAME,
    "tracked file name": TRACKED_NAME,
}

TRAIN = """\
import hydra
from omegaconf import DictConfig


@hydra.main(version_base=None, config_path=".", config_name="conf")
def main(cfg: DictConfig) -> None:
    print("epochs", cfg.epochs, "api at", cfg.api.url)


if __name__ == "__main__":
    main()
"""
# Lines git prints after a hunk's @@ start at column 0; the indented ones do not.
HEADED = f'x = 1\nprint("{HUNK}")\n    # a\n    # b\n    # c\n    # d\ne = 5\n'


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    pytest.importorskip("hydra")
    tmp = tmp_path_factory.mktemp("boundary")
    repo = tmp / "proj"
    new_repo(
        repo,
        {
            "train.py": TRAIN,
            "conf.yaml": "epochs: 2\napi:\n  url: https://api.example\n  bearer: null\n",
            "headed.py": HEADED,
            f"{TRACKED_NAME}.py": "A = 1\n",
        },
    )
    (repo / "headed.py").write_text(HEADED.replace("e = 5", "e = 6"))
    (repo / f"{TRACKED_NAME}.py").write_text("A = 2\n")
    (repo / f"{FILE_NAME}.txt").write_text("nothing secret inside\n")
    (repo / "notify.yaml").write_text(
        f"notify:\n  url: {WEBHOOK}\nsms:\n  account: {TWILIO}\n  retries: 3\n"
    )
    (repo / "api.toml").write_text(f'[api]\nbearer = "{TOML_BEARER}"\ntimeout = 30\n')
    init_ledger(repo)
    r = run_ledger(
        "record",
        "--json",
        "--name",
        f"baseline {NAME}",
        "--tag",
        f"upload={TAG}",
        "--config",
        "notify.yaml",
        "--config",
        "api.toml",
        "--",
        sys.executable,
        "train.py",
        f"api.bearer={HYDRA_BEARER}",
        f"hydra.run.dir={tmp / 'hydra-out'}",
        cwd=repo,
    )
    assert r.returncode == 0, r.stderr
    return repo, str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _everything(repo: Path, run_id: str) -> dict[str, bytes]:
    found = stored_bytes(repo / ".ledger")
    with sqlite3.connect(repo / ".ledger" / "index.sqlite") as db:  # every cell of the index
        for (table,) in db.execute("select name from sqlite_master where type='table'"):
            rows = db.execute(f'select * from "{table}"').fetchall()
            found[f"index table {table}"] = repr(rows).encode()
    for args in (["show", run_id[:12]], ["ls"], ["show", "--json", run_id[:12]]):
        r = run_ledger(*args, cwd=repo)
        assert r.returncode == 0, r.stderr
        found[f"ledger {' '.join(args)}"] = (r.stdout + r.stderr).encode()
    return found


@pytest.mark.parametrize("where", list(SECRETS))
def test_secret_reaches_no_stored_string(recorded: tuple[Path, str], where: str) -> None:
    repo, run_id = recorded
    secret = SECRETS[where].encode()
    leaks = [name for name, data in _everything(repo, run_id).items() if secret in data]
    assert leaks == []


def test_what_is_not_secret_stays_and_the_patch_still_applies(recorded: tuple[Path, str]) -> None:
    repo, run_id = recorded
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id[:12])
    assert run.name is not None and run.name.startswith("baseline ")
    assert set(run.tags) == {"upload"}
    config = store.get_json(run.resolved_config)
    notify, api = config["files"][0]["value"], config["files"][1]["value"]
    assert notify["sms"]["retries"] == 3 and api["api"]["timeout"] == 30
    assert notify["notify"]["url"] != WEBHOOK and notify["sms"]["account"] != TWILIO
    (hydra,) = config["hydra"]
    assert hydra["config"]["epochs"] == 2 and hydra["config"]["api"]["url"] == "https://api.example"
    code = store.get_json(store.get_json(run.contract)["code"])
    patch = store.objects.get_bytes(code["patch"])
    assert b"@@ -4,4 +4,4 @@\n" in patch  # the hunk header without the line that quoted it
    assert b"-e = 5\n+e = 6\n" in patch
    (repo / "stored.patch").write_bytes(patch)
    # The stored patch is what the working tree holds over HEAD, minus the left-out file.
    check = subprocess.run(
        ["git", "apply", "--check", "-R", "stored.patch"], cwd=repo, capture_output=True
    )
    assert check.returncode == 0, check.stderr
    notes = "\n".join(run.notes)
    assert "untracked files whose names hold a secret, never captured: 1" in notes
    assert "tracked files whose names hold a secret" in notes
    assert "hunk headers (git ignores them) (1): headed.py:4" in notes, notes
    untracked = store.get_json(code["untracked"])
    names = json.dumps(untracked)
    assert "notify.yaml" in names and "api.toml" in names  # the other untracked files stay


def test_a_name_without_secrets_is_kept_whole(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    new_repo(repo, {"run.py": "print('ok')\n"})
    init_ledger(repo)
    name = "resnet50-imagenet-baseline_lr0.1_warmup5"
    r = run_ledger(
        "record", "--json", "--name", name, "-t", "dataset=imagenet_2012_train",
        "--", sys.executable, "run.py", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    _, run = load_run(Store.open(repo / ".ledger"), run_id[:12])
    assert run.name == name and run.tags == {"dataset": "imagenet_2012_train"}
    git(repo, "status")  # the repository is untouched


LOOKUP_KEYS = """\
checkpoint: {state_key: model}
trainer:
  sort_key: name
  primary_key: id
  monitor_key: val_loss
hub:
  api_key: hubkey-Q7w2Lp9X
  key: Xk29-secret-Pq
"""


def test_lookup_keys_in_a_config_are_kept_and_real_keys_are_not(tmp_path: Path) -> None:
    # issue 32, point 12: ``state_key: model`` is a lookup key, not a credential; redacting
    # it broke the stored file. A key that is a credential by its name or its value goes.
    repo = tmp_path / "proj"
    new_repo(repo, {"run.py": "print('ok')\n"})
    (repo / "lookup.yaml").write_text(LOOKUP_KEYS)
    init_ledger(repo)
    r = run_ledger(
        "record", "--json", "--config", "lookup.yaml",
        "--", sys.executable, "run.py", "--state-key", "model", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id[:12])
    contract = store.get_json(run.contract)
    assert contract["argv"][-2:] == ["--state-key", "model"]
    (file,) = store.get_json(run.resolved_config)["files"]
    assert file["value"]["checkpoint"] == {"state_key": "model"}
    assert file["value"]["trainer"] == {
        "sort_key": "name", "primary_key": "id", "monitor_key": "val_loss"
    }  # fmt: skip
    stored = store.objects.get_bytes(file["oid"]).decode()
    assert stored.splitlines()[:5] == LOOKUP_KEYS.splitlines()[:5]
    # the untracked copy of the file, too (the code record)
    code = store.get_json(contract["code"])
    assert code["redacted"] == ["lookup.yaml:7", "lookup.yaml:8"]
    for secret in ("hubkey-Q7w2Lp9X", "Xk29-secret-Pq"):
        assert not [n for n, d in stored_bytes(repo / ".ledger").items() if secret.encode() in d]
