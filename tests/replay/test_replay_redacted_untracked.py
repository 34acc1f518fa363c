"""Untracked files at replay (issue 32, point 12): code and config that hold no secret are
stored as they are and replay bitwise; a file whose secret was redacted cannot be rebuilt, and
replay refuses it, naming the file, the line and the redaction, before anything runs (it used
to run the redacted file with a note)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

from ledger.capture.trees import load_tree
from ledger.records.code import CodeSnapshot
from ledger.run.find import load_run
from ledger.store import Store

HERE = Path(__file__).resolve().parents[1] / "capture" / "fp_corpus"
TRAIN = """\
import hashlib, pathlib
for name in ("conf.yaml", "helper.py"):
    data = pathlib.Path(name).read_bytes()
    print(name, hashlib.sha256(data).hexdigest())
print("loss 0.25")
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text(".ledger/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    return repo


def _record(repo: Path) -> str:
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", cwd=repo)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _stored_untracked(repo: Path, run_id: str) -> tuple[CodeSnapshot, dict[str, bytes]]:
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    code = CodeSnapshot.model_validate(store.get_json(store.get_json(run.contract)["code"]))
    assert code.untracked is not None
    tree = load_tree(store, code.untracked)
    return code, {e.path: store.objects.get_bytes(e.oid) for e in tree.entries}


def test_untracked_code_and_config_are_stored_whole_and_replay(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    conf = (HERE / "train.yaml").read_bytes()  # checkpoint: {state_key: model}, ${oc.env:...}
    helper = (HERE / "train.py").read_bytes()  # f"not --key=value: {arg}", api_key = os.env...
    (repo / "conf.yaml").write_bytes(conf)
    (repo / "helper.py").write_bytes(helper)
    run_id = _record(repo)
    code, stored = _stored_untracked(repo, run_id)
    assert stored == {"conf.yaml": conf, "helper.py": helper}
    assert code.redacted == []
    r = run_ledger("replay", run_id[:12], cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REPRODUCED" in r.stdout and "redacted" not in r.stdout


def test_replay_refuses_an_untracked_file_whose_secret_was_redacted(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "conf.yaml").write_text("epochs: 2\ndb:\n  password: hunter2xyz\n")
    (repo / "helper.py").write_text('GITHUB_TOKEN = "GhUntracked-3Lq"\nX = 1\n')
    run_id = _record(repo)
    code, stored = _stored_untracked(repo, run_id)
    assert sorted(code.redacted) == ["conf.yaml:3", "helper.py:1"]
    assert (
        "secrets redacted in untracked files; replay cannot rebuild them and refuses to run "
        "(keep secrets out of the working tree) (2): conf.yaml:3 (Secret Keyword), "
        "helper.py:1 (name rule)"
    ) in code.notes, code.notes
    assert b"hunter2xyz" not in stored["conf.yaml"]
    runs_before = run_ledger("ls", "--json", cwd=repo).stdout
    r = run_ledger("replay", run_id[:12], cwd=repo)
    assert r.returncode == 7, r.stdout + r.stderr
    err = " ".join(r.stderr.split())
    assert "conf.yaml:3 ([REDACTED:Secret Keyword])" in err, err
    assert "helper.py:1 ([REDACTED:name rule])" in err, err
    assert "cannot be rebuilt as they were" in err and "Traceback" not in err
    assert "keep secrets out of files in the working tree" in err
    # Nothing ran: no replay run was recorded.
    assert run_ledger("ls", "--json", cwd=repo).stdout == runs_before
