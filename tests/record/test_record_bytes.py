"""Bytes that are not UTF-8: argv is stored exactly and replayed exactly; paths, names and
recorded values are refused with exit 2 before anything is written. Never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import start_ledger

from ledger.records.contract import Contract
from ledger.run.find import load_run
from ledger.store import Store

SHOW_ARGV = """
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--name")
p.add_argument("rest", nargs="*")
p.parse_args()
sys.stdout.buffer.write(b"\\0".join(os.fsencode(a) for a in sys.argv[1:]) + b"\\n")
"""
BAD = os.fsdecode(b"x\xff\xfey")  # what Python makes of the bytes: 'x\udcff\udcfey'


def ledger(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return start_ledger(*args, cwd=cwd, text=False, **env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "show.py").write_text(SHOW_ARGV)
    (repo / ".gitignore").write_text(".ledger/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    assert ledger("init", cwd=repo).returncode == 0
    return repo


def _run_id(r: subprocess.CompletedProcess[bytes]) -> str:
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b"Traceback" not in r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def test_argv_bytes_are_stored_and_replayed_exactly(project: Path) -> None:
    args = ["--name", BAD, "ok", os.fsdecode(b"\xe9t\xe9")]
    r = ledger("record", "--json", "--", sys.executable, "show.py", *args, cwd=project)
    run_id = _run_id(r)
    exact = b"\0".join(os.fsencode(a) for a in args) + b"\n"
    assert r.stdout == exact  # the command got the bytes it was given
    store = Store.open(project / ".ledger")
    _, run = load_run(store, run_id)
    contract = Contract.model_validate(store.get_json(run.contract))
    assert contract.argv[-4:] == ["--name", "x\ufffd\ufffdy", "ok", "\ufffdt\ufffd"]
    assert contract.argv_b64 is not None and contract.argv_b64[-1] == "6XTp"  # b"\xe9t\xe9"
    config = store.get_json(run.resolved_config)  # the argparse capture is kept, readable
    assert config["argparse"][0]["namespace"]["name"] == "x\ufffd\ufffdy"
    assert config["notes"] == []

    replay = ledger("replay", run_id, cwd=project)
    assert replay.returncode == 0, replay.stderr.decode(errors="replace")
    replays = [ref for ref, _ in store.refs.iter("runs/") if ref != f"runs/{run_id}"]
    assert len(replays) == 1
    _, again = load_run(store, replays[0].removeprefix("runs/"))
    assert again.replay_of == run_id and again.stdout is not None
    assert store.objects.get_bytes(again.stdout) == exact


def test_arguments_differing_only_in_bytes_get_different_contracts(project: Path) -> None:
    ids = [
        _run_id(ledger("record", "--json", "--", sys.executable, "show.py", a, cwd=project))
        for a in (os.fsdecode(b"\xff"), os.fsdecode(b"\xfe"))
    ]
    store = Store.open(project / ".ledger")
    runs = [load_run(store, i)[1] for i in ids]
    contracts = [store.get_json(r.contract) for r in runs]
    assert contracts[0]["argv"] == contracts[1]["argv"]  # both read "\ufffd"
    assert runs[0].contract_digest != runs[1].contract_digest
    diff = ledger("diff", *ids, "--json", cwd=project)
    assert diff.returncode == 0, diff.stderr
    assert json.loads(diff.stdout)["argv"] is not None  # the commands differ


def _setup(project: Path) -> None:
    (project / os.fsdecode(b"in\xff")).write_text("data")
    (project / os.fsdecode(b"c\xff.yaml")).write_text("a: 1\n")
    (project / os.fsdecode(b"d\xff")).mkdir()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--input", os.fsdecode(b"in\xff")], {}, "--input path b'in\\xff' is not valid UTF-8"),
        (["--output", os.fsdecode(b"o\xff")], {}, "--output path b'o\\xff' is not valid UTF-8"),
        (["--config", os.fsdecode(b"c\xff.yaml")], {}, "--config path b'c\\xff.yaml'"),
        (["--name", BAD], {}, "--name b'x\\xff\\xfey' is not valid UTF-8"),
        (["--tag", f"k={BAD}"], {}, "--tag b'k=x\\xff\\xfey' is not valid UTF-8"),
        (["--env", "FOO"], {"FOO": BAD}, "the value of --env FOO b'x\\xff\\xfey'"),
        (["--metric", f"(?P<a>{BAD})"], {}, "--metric b'(?P<a>x\\xff\\xfey)' is not valid"),
        ([], {"CWD": "d\udcff"}, "the working directory b'"),
    ],
)
def test_paths_names_and_values_not_utf8_are_refused(
    project: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    _setup(project)
    cwd = project / env.pop("CWD") if "CWD" in env else project
    r = ledger("record", *args, "--", sys.executable, str(project / "show.py"), cwd=cwd, **env)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "ledger: error: " + message in err and "ledger: hint: " in err
    assert "Traceback" not in err and r.stdout == b""  # the command never ran
    store = Store.open(project / ".ledger")
    assert list(store.refs.iter("runs/")) == []
    assert not any((project / ".ledger" / "staging").glob("*"))


def test_recorded_variables_not_utf8_are_left_out_and_secrets_still_scrubbed(
    project: Path,
) -> None:
    secret = b"s3cr3t-\xff-token"
    echo = "import os; os.write(1, os.environb[b'MY_API_TOKEN'] + b'\\n')"
    r = ledger(
        "record", "--json", "--", sys.executable, "-c", echo, cwd=project,
        CUDA_VISIBLE_DEVICES=os.fsdecode(b"0\xff"), MY_API_TOKEN=os.fsdecode(secret),
    )  # fmt: skip
    run_id = _run_id(r)
    store = Store.open(project / ".ledger")
    _, run = load_run(store, run_id)
    contract = store.get_json(run.contract)
    assert "CUDA_VISIBLE_DEVICES" not in contract["env_vars"]
    assert run.stdout is not None and secret not in store.objects.get_bytes(run.stdout)


def test_no_staging_dir_is_left_when_the_running_record_cannot_be_written(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A disk that fills up between the staging dir and the running record: injected, as
    # root ignores the permissions that could make it happen for real.
    from ledger.run.record import RecordOptions, begin

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    store = Store.open(project / ".ledger")
    monkeypatch.setattr(type(store), "set_ref", full)
    with pytest.raises(OSError):
        begin(RecordOptions(command=[sys.executable, "show.py"], cwd=project), store)
    assert not any((project / ".ledger" / "staging").glob("*"))
