"""The secret corpus: every class of secret, planted where a run's data comes from, recorded by
a real ``ledger record`` in a real git repository; then every stored byte is searched.

Each row of ``CORPUS`` is one secret: its class, where it is planted, and whether it is known
at launch (then its base64, URL-encoded and hex forms must be absent too). The secrets are
distinct strings that occur nowhere else, so a hit is a leak, never a coincidence.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from _support import init_ledger, run_ledger

from ledger.run.find import load_run
from ledger.store import Store


@dataclass(frozen=True)
class Secret:
    cls: str  # the class of leak
    where: str  # where the test plants it
    value: str
    known: bool  # known at launch (env, argv): its encoded forms must be absent too


AWS_ID = "AKIA" + "QXWZ4JPLM7RT2VNB"
PATCH_AWS_ID = "AKIA" + "ZP3MW8QJ5TKD2XRV"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Qz8Lm2Np4X"
GH_TOKEN = "ghp_" + "R8s2Lq0Xv6Tn4Wm1Kb9Pz3Yc7Hd5Jf2Ga8Ne"
SLACK = "xoxb-" + "2048199231-7731298410-Yq8Kw2Lp9Rt5Mz3Nx"
PEM_BODY = "MIIEowIBAAKCAQEAvQ7c3Y1Lr8zK2Tn4Wq9Xm5Pb7Hd3Jf6Ga2Ne8Rs0Lv4Yc"
DB_URL_PW = "dbUrlPw-55xQ"
KW_ASSIGN = "kwAssign-88Jr"

ENV = {
    "API_KEY_2": "envk2-Hq7Rw",
    "PASSWORD1": "pw1Zq",
    "OPENAI_API_KEY_PROD": "sk-prod+Xy/Zw=9Lq",
    "MY_SERVICE_TOKEN": "tk4Q",
    "UPSTREAM": GH_TOKEN,
    "HUB_TOKEN": "hubtok-Vx3Jq8",
}

CORPUS = [
    # env: names the old rules did not recognise, short values, values known by content
    Secret("env name, numbered", "env API_KEY_2", ENV["API_KEY_2"], True),
    Secret("env name, numbered, short", "env PASSWORD1", ENV["PASSWORD1"], True),
    Secret("env name, qualified", "env OPENAI_API_KEY_PROD", ENV["OPENAI_API_KEY_PROD"], True),
    # Only the scrub of env values catches this one: short, low entropy, printed bare.
    Secret("env short value", "env MY_SERVICE_TOKEN", ENV["MY_SERVICE_TOKEN"], True),
    Secret("env value by content", "env UPSTREAM", GH_TOKEN, True),
    Secret("env value in argv", "env HUB_TOKEN, passed as an argument", ENV["HUB_TOKEN"], True),
    # argv
    Secret("argv numbered option", "--api-key-2 VALUE", "argk2-Pq8Vb", True),
    Secret("argv short option", "-p VALUE", "psh9Kx", True),
    Secret("argv option=value", "--db-password=VALUE", "dbpw-Eq77Zn", True),
    Secret("argv by content", "positional AWS key id", AWS_ID, True),
    # config files, raw bytes and parsed
    Secret("config yaml", "train.yaml hub.api_key_2", "cfgyaml-Kp3Wd", False),
    Secret("config yaml, short", "train.yaml db.password", "cY5", False),
    Secret("config json", "extra.json credentials.password1", "cfgjson-Lm4Ts", False),
    Secret("config toml", "svc.toml service.secret_token", "cfgtoml-Rt6Yh", False),
    # printed by the program, never declared
    Secret("stdout db url password", "stdout", DB_URL_PW, False),
    Secret("stdout keyword assignment", "stdout", KW_ASSIGN, False),
    Secret("stderr slack token", "stderr", SLACK, False),
    Secret("stderr private key body", "stderr", PEM_BODY, False),
    # the dirty patch of tracked files
    Secret("patch aws key id", "settings.py", PATCH_AWS_ID, False),
    Secret("patch aws secret", "settings.py", AWS_SECRET, False),
    # untracked files
    Secret("untracked .env", ".env", "dotenv-Wq2Lk9", False),
    Secret("untracked .env variant", "deploy/.env.production", "dotenvprod-Zt5", False),
    Secret("untracked yaml", "deploy.yaml", "untrk-Tk9Mv2", False),
    Secret("untracked py", "keys.py", "GhUntracked-3Lq", False),
]
# What the program prints besides the secrets: none of it may be taken for one.
KEEP = [
    "step 2 loss 0.2500",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "checkpoint b3:" + "9c41" * 16,
    "lr: 0.001",
]

TRAIN = """\
import argparse, base64, os, sys
from urllib.parse import quote
p = argparse.ArgumentParser()
p.add_argument("--api-key-2")
p.add_argument("-p")
p.add_argument("--db-password")
p.add_argument("--hub-token")
p.add_argument("--config", action="append")
p.add_argument("positional", nargs="*")
a = p.parse_args()
env = os.environ
print("step 2 loss 0.2500")
print("commit 3f786850e387550fdab836ed7e6dc881de23001b")
print("checkpoint b3:" + "9c41" * 16)
print("lr: 0.001")
# secrets known at launch, echoed plainly and encoded
print("connected with", env["MY_SERVICE_TOKEN"], "ok")
print("header", base64.b64encode(env["API_KEY_2"].encode()).decode())
print("basic", base64.b64encode(("user:" + env["PASSWORD1"]).encode()).decode())
print("query ?k=" + quote(env["OPENAI_API_KEY_PROD"], safe=""))
print("upstream", env["UPSTREAM"], "argv", a.api_key_2, a.p, a.db_password, a.positional)
print("hub", a.hub_token, base64.b64encode(a.hub_token.encode()).decode())
print("b64 argv", base64.b64encode(a.p.encode()).decode())
# secrets nobody declared: found by content
print("db at postgresql://trainer:@DBURL@@db.internal:5432/exp")
print("password = @KWASSIGN@")
print("slack @SLACK@", file=sys.stderr)
print("-----BEGIN RSA PRIVATE KEY-----", file=sys.stderr)
print("@PEMBODY@", file=sys.stderr)
print("-----END RSA PRIVATE KEY-----", file=sys.stderr)
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        },
    )


def new_repo(repo: Path, files: dict[str, str]) -> None:
    repo.mkdir(parents=True)
    for name, text in {**files, ".gitignore": ".ledger/\n"}.items():
        (repo / name).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")


def encoded_forms(value: str) -> set[str]:
    raw = value.encode()
    return {
        value,
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        quote(value, safe=""),
        quote_plus(value),
        raw.hex(),
    }


def stored_bytes(root: Path) -> dict[str, bytes]:
    """Every object decompressed, and every other file of the ledger as it is on disk."""
    store = Store.open(root)
    found = {f"object {oid}": store.objects.get_bytes(oid) for oid in store.objects}
    for path in root.rglob("*"):
        if path.is_file() and "objects" not in path.relative_to(root).parts:
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def run_id_of(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    repo = tmp_path_factory.mktemp("secrets") / "proj"
    train = TRAIN
    for word, value in [
        ("DBURL", DB_URL_PW),
        ("KWASSIGN", KW_ASSIGN),
        ("SLACK", SLACK),
        ("PEMBODY", PEM_BODY),
    ]:
        train = train.replace(f"@{word}@", value)
    new_repo(repo, {"train.py": train, "settings.py": "REGION = 'eu-west-1'\n"})
    # the dirty patch: credentials added to a tracked file
    (repo / "settings.py").write_text(
        "REGION = 'eu-west-1'\n"
        f"AWS_ACCESS_KEY_ID = '{PATCH_AWS_ID}'\n"
        f"aws_secret_access_key = '{AWS_SECRET}'\n"
    )
    # untracked files
    (repo / ".env").write_text("SECRET=dotenv-Wq2Lk9\nDEBUG=1\n")
    (repo / "deploy").mkdir()
    (repo / "deploy" / ".env.production").write_text("TOKEN=dotenvprod-Zt5\n")
    (repo / "deploy.yaml").write_text("replicas: 2\nregistry:\n  token: untrk-Tk9Mv2\n")
    (repo / "keys.py").write_text('UPLOAD = True\nGITHUB_TOKEN = "GhUntracked-3Lq"\n')
    # config files
    (repo / "train.yaml").write_text(
        "model: {width: 64}\nhub:\n  api_key_2: cfgyaml-Kp3Wd\ndb:\n  password: cY5\n"
    )
    (repo / "extra.json").write_text(
        json.dumps({"epochs": 3, "credentials": {"password1": "cfgjson-Lm4Ts"}}, indent=1)
    )
    (repo / "svc.toml").write_text('[service]\nport = 8080\nsecret_token = "cfgtoml-Rt6Yh"\n')
    init_ledger(repo)
    configs = ["--config", "train.yaml", "--config", "extra.json", "--config", "svc.toml"]
    command = [sys.executable, "train.py", "--api-key-2", "argk2-Pq8Vb", "-p", "psh9Kx"]
    command += ["--db-password=dbpw-Eq77Zn", "--config", "train.yaml", AWS_ID]
    command += ["--hub-token", ENV["HUB_TOKEN"]]  # as a shell expands "$HUB_TOKEN"
    r = run_ledger("record", "--json", *configs, "--", *command, cwd=repo, **ENV)
    return repo, run_id_of(r)


@pytest.mark.parametrize("secret", CORPUS, ids=[f"{s.cls}: {s.where}" for s in CORPUS])
def test_secret_is_stored_nowhere(recorded: tuple[Path, str], secret: Secret) -> None:
    repo, _ = recorded
    forms = encoded_forms(secret.value) if secret.known else {secret.value}
    leaks = [
        f"{form!r} in {name}"
        for name, data in stored_bytes(repo / ".ledger").items()
        for form in forms
        if form.encode() in data
    ]
    assert leaks == []


def test_what_is_not_secret_is_kept_and_redactions_are_noted(
    recorded: tuple[Path, str],
) -> None:
    repo, run_id = recorded
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id[:12])
    assert run.stdout is not None
    stdout = store.objects.get_bytes(run.stdout).decode()
    for line in KEEP:  # hashes, ids and metrics are not secrets
        assert line in stdout
    assert "connected with [REDACTED:MY_SERVICE_TOKEN] ok" in stdout
    # a known secret inside a longer base64 text (basic auth), at any alignment
    assert base64.b64encode(b"user:" + ENV["PASSWORD1"].encode()).decode()[:-2] not in stdout
    notes = "\n".join(run.notes)
    # a short secret is named by its variable, never by its value
    assert "$MY_SERVICE_TOKEN (a short value, 4 characters) was scrubbed from stdout" in notes
    # the patch and untracked files: file and line
    assert "settings.py:2 (AWS Access Key)" in notes and "settings.py:3" in notes, notes
    assert "train.yaml:3 (Secret Keyword)" in notes and "svc.toml:3" in notes
    assert "deploy.yaml:3" in notes and "keys.py:2" in notes
    assert "credential files, never captured" in notes
    assert ".env" in notes and "deploy/.env.production" in notes
    contract = store.get_json(run.contract)
    assert contract["argv"][-2:] == ["--hub-token", "[REDACTED:HUB_TOKEN]"]
    config = store.get_json(run.resolved_config)
    assert config["files"][0]["value"]["model"] == {"width": 64}  # what is not secret stays


def test_replay_refuses_a_secret_given_on_the_command_line(recorded: tuple[Path, str]) -> None:
    repo, run_id = recorded
    r = run_ledger("replay", run_id[:12], cwd=repo, **ENV)
    assert r.returncode == 7, r.stderr
    assert "secret given on the command line itself" in r.stderr
    assert "Traceback" not in r.stderr


def test_replay_takes_an_env_secret_again_and_warns_about_redacted_lines(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    check = "import sys\nassert sys.argv[2] == 'hubtok-Vx3Jq8', sys.argv\nprint('ok')\n"
    new_repo(repo, {"run.py": check, "hub.cfg": "[hub]\nurl = https://hub\n"})
    (repo / "hub.cfg").write_text("[hub]\nurl = https://hub\ntoken = " + GH_TOKEN + "\n")
    init_ledger(repo)
    argv = ["--", sys.executable, "run.py", "--hub-token", ENV["HUB_TOKEN"]]
    run_id = run_id_of(run_ledger("record", "--json", *argv, cwd=repo, HUB_TOKEN=ENV["HUB_TOKEN"]))
    r = run_ledger("replay", run_id[:12], cwd=repo)  # the variable is not set now
    assert r.returncode == 7 and "$HUB_TOKEN, which is not set now" in r.stderr, r.stderr
    r = run_ledger("replay", run_id[:12], cwd=repo, HUB_TOKEN=ENV["HUB_TOKEN"])
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())  # the console wraps long lines
    assert "differ from the recorded code, where a secret was redacted (1): hub.cfg:3" in out
