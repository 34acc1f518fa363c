"""`ledger verify` checks that every sealed run can still be replayed: a run whose replay
material is missing is reported with its id and what is missing, and verify exits 1.
Real git repository, real `ledger record` subprocesses; objects are lost by deleting their
files, as a disk error, a careless `rm` or an old gc would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.records.code import CodeSnapshot
from ledger.run.find import load_run
from ledger.store import Store

pytestmark = [pytest.mark.slow]

READ = """
import pathlib
names = sorted(p.name for p in pathlib.Path("d").iterdir())
print(len(pathlib.Path("data.csv").read_bytes()), names)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "d").mkdir(parents=True)
    (root / "read.py").write_text(READ)
    (root / "lib.py").write_text("X = 1\n")
    (root / ".gitignore").write_text(".ledger/\ndata.csv\nd/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    (root / "lib.py").write_text("X = 2\n")  # a dirty patch
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "d" / "one.txt").write_text("one\n")
    (root / "d" / "two.txt").write_text("two\n")
    init_ledger(root)
    return root


def _record(repo: Path, *args: str) -> str:
    r = run_ledger(
        "record", "--json", *args, "--input", "data.csv", "--input", "d", "--",
        sys.executable, "read.py",
        cwd=repo,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _lose(store: Store, oid: str) -> None:
    path = store.objects.path_of(oid)
    path.parent.chmod(0o755)
    path.unlink()


def _verify(repo: Path) -> tuple[int, str, dict[str, object]]:
    text = run_ledger("verify", cwd=repo)
    data = run_ledger("verify", "--json", cwd=repo)
    return text.returncode, " ".join(text.stdout.split()), json.loads(data.stdout)


def test_verify_names_the_run_and_the_missing_input(repo: Path) -> None:
    run_id = _record(repo)
    assert _verify(repo)[0] == 0
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    assert [c.stored for c in run.inputs_after] == [True, True]
    _lose(store, store.objects.resolve("b3:" + _blake3(repo / "d" / "two.txt")))

    code, text, data = _verify(repo)
    assert code == 1
    assert f"unreplayable: run {run_id} cannot be replayed: input d: file two.txt" in text
    problems = data["problems"]
    assert isinstance(problems, list)
    assert [(p["kind"], p["subject"]) for p in problems] == [("unreplayable", run_id)]
    # What verify said is what replay then hits.
    (repo / "d" / "two.txt").unlink()
    replay = run_ledger("replay", run_id, cwd=repo)
    assert replay.returncode == 7 and "two.txt" in replay.stderr


def test_verify_reports_a_lost_patch_and_untracked_file(repo: Path) -> None:
    (repo / "helper.py").write_text("Y = 3\n")  # untracked
    run_id = _record(repo)
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    code_rec = CodeSnapshot.model_validate(store.get_json(store.get_json(run.contract)["code"]))
    assert code_rec.patch is not None and code_rec.untracked is not None
    _lose(store, code_rec.patch)
    code, text, _ = _verify(repo)
    assert code == 1
    assert f"run {run_id} cannot be replayed: the patch of its uncommitted changes" in text


def test_inputs_not_stored_by_choice_are_noted_not_reported(repo: Path) -> None:
    (repo / "data.csv").write_text("only hashed\n")
    run_id = _record(repo, "--no-store-inputs")
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, run_id)
    assert [c.stored for c in run.inputs_after] == [False, False]
    code, text, data = _verify(repo)
    assert code == 0, text
    notes = data["notes"]
    assert isinstance(notes, list) and len(notes) == 2
    assert f"note: run {run_id}: input data.csv was recorded with --no-store-inputs" in text


def _blake3(path: Path) -> str:
    from ledger._hashing import hash_bytes

    return hash_bytes(path.read_bytes())[3:]
