"""A name is its newest original run; replays sit under their original and replay again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.store import Store

METRIC = r"step (?P<step>\d+) loss (?P<loss>\S+)"
SCRIPT = """
import os, random
r = random.Random(int(os.environ.get("SEED", "1")))
for step in range(3):
    print(f"step {step} loss {r.random()!r}", flush=True)
"""


def _git(root: Path, *args: str) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
    )
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / ".gitignore").write_text(".ledger/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    # Uncommitted and untracked code: the replay of a replay must rebuild both from the store.
    (root / "train.py").write_text(SCRIPT.replace("range(3)", "range(STEPS)"))
    (root / "steps.py").write_text("STEPS = 4\n")
    (root / "train.py").write_text("from steps import STEPS\n" + (root / "train.py").read_text())
    init_ledger(root)
    return root


def _record(repo: Path, name: str, **env: str) -> str:
    r = run_ledger(
        "record",
        "--name",
        name,
        "--metric",
        METRIC,
        "--env",
        "SEED",
        "--json",
        "--",
        sys.executable,
        "train.py",
        cwd=repo,
        **env,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(repo: Path, text: str) -> dict[str, object]:
    r = run_ledger("replay", text, "--json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict: dict[str, object] = json.loads(r.stdout[r.stdout.index("{\n") :])
    return verdict


def _replays(verdict: dict[str, object]) -> list[str]:
    replays = verdict["replays"]
    assert isinstance(replays, list)
    return [str(r) for r in replays]


def test_a_name_stays_with_its_original_through_replays(repo: Path) -> None:
    original = _record(repo, "base")
    first = _replay(repo, "base")
    assert first["original"] == original
    # The replay carries the name, but `base` still means the original everywhere.
    second = _replay(repo, "base")
    assert second["original"] == original
    shown = json.loads(run_ledger("show", "base", "--json", cwd=repo).stdout)
    assert shown["run"]["run_id"] == original
    assert [r["run_id"] for r in shown["replays"]] == _replays(first) + _replays(second)
    replay_id = _replays(second)[0]
    d = json.loads(run_ledger("diff", "base", replay_id, "--json", cwd=repo).stdout)
    assert (d["a"], d["b"]) == (original, replay_id)
    assert d["code"] == {"same": True, "patch": ""}
    # A newer original takes the name over; replays never do.
    newer = _record(repo, "base", SEED="2")
    assert (
        json.loads(run_ledger("show", "base", "--json", cwd=repo).stdout)["run"]["run_id"] == newer
    )
    _replay(repo, newer)
    assert _replay(repo, "base")["original"] == newer


def test_a_replay_of_a_replay_rebuilds_the_code_from_the_store(repo: Path) -> None:
    original = _record(repo, "base")
    replay_id = _replays(_replay(repo, "base"))[0]
    # The user's tree moves on: the replay's code must come from the store, not from it.
    (repo / "steps.py").unlink()
    (repo / "train.py").write_text("raise SystemExit(3)\n")
    again = _replay(repo, replay_id)
    assert again["original"] == replay_id and again["outcome"] == "reproduced"
    third = _replay(repo, _replays(again)[0])
    assert third["outcome"] == "reproduced"
    store = Store.open(repo / ".ledger")
    from ledger.records.base import record_from_json
    from ledger.records.contract import Contract
    from ledger.run.find import load_run

    codes = set()
    for run_id in (original, replay_id, *_replays(again), *_replays(third)):
        contract = record_from_json(store.get_json(load_run(store, run_id)[1].contract), Contract)
        assert isinstance(contract, Contract)
        codes.add(contract.code)
    assert len(codes) == 1  # every replay points at the original's code snapshot


def test_a_replay_recorded_from_its_workspace_replays_through_its_original(repo: Path) -> None:
    """Replays recorded before replays pointed at their original's code hold a snapshot of a
    deleted workspace; replaying them takes the code from up the chain."""
    from ledger.records.base import record_from_json
    from ledger.records.code import CodeSnapshot
    from ledger.records.contract import Contract
    from ledger.replay.workspace import build_workspace
    from ledger.run.find import load_run
    from ledger.run.record import RecordOptions, record

    original = _record(repo, "base")
    store = Store.open(repo / ".ledger")
    run = load_run(store, original)[1]
    contract = record_from_json(store.get_json(run.contract), Contract)
    assert isinstance(contract, Contract)
    ws = build_workspace(store, contract)
    old = record(
        RecordOptions(
            command=list(contract.argv),
            name=run.name,
            metrics=list(contract.metric_patterns),
            cwd=ws.run_dir,
            replay_of=original,
        ),
        store,
    )
    shutil.rmtree(ws.root)
    old_contract = record_from_json(store.get_json(old.run.contract), Contract)
    assert isinstance(old_contract, Contract)
    snap = record_from_json(store.get_json(old_contract.code), CodeSnapshot)
    assert isinstance(snap, CodeSnapshot) and snap.root == str(ws.root / "code")
    assert old_contract.code_digest == contract.code_digest
    verdict = _replay(repo, old.run_id)
    assert verdict["original"] == old.run_id and verdict["outcome"] == "reproduced"


def test_ls_lists_originals_and_replays_under_them(repo: Path) -> None:
    a = _record(repo, "a")
    b = _record(repo, "b")
    ra = _replays(_replay(repo, a))[0]
    rra = _replays(_replay(repo, ra))[0]
    rows = json.loads(run_ledger("ls", "--json", cwd=repo).stdout)
    assert [(r["run_id"], r["replays"]) for r in rows] == [(b, 0), (a, 2)]
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=repo).stdout)
    assert [r["run_id"] for r in rows] == [b, a, ra, rra]
    assert [r.get("original") for r in rows] == [None, None, a, a]
    assert [r["replay_of"] for r in rows] == [None, None, a, ra]
    # Filters and --limit pick originals; their replays come along.
    rows = json.loads(run_ledger("ls", "--name", "a", "--replays", "--json", cwd=repo).stdout)
    assert [r["run_id"] for r in rows] == [a, ra, rra]
    rows = json.loads(run_ledger("ls", "--limit", "1", "--replays", "--json", cwd=repo).stdout)
    assert [r["run_id"] for r in rows] == [b]
    table = run_ledger("ls", "--replays", cwd=repo, COLUMNS="200").stdout
    lines = [line for line in table.splitlines() if line.strip()]
    # The id column holds the short id: the start of the run id's random tail.
    assert a.rsplit("-", 1)[1].startswith(lines[2].split()[0]) and lines[2].split()[-1] == "2"
    mark, short = lines[3].split()[:2]
    assert mark == "↳" and ra.rsplit("-", 1)[1].startswith(short) and "replay" in lines[3]
    plain = run_ledger("ls", cwd=repo, COLUMNS="200").stdout
    assert short not in plain


def test_a_name_falls_back_to_a_replay_only_without_an_original(repo: Path) -> None:
    original = _record(repo, "solo")
    replay_id = _replays(_replay(repo, "solo"))[0]
    # A run is never deleted (docs/format.md, "Transitions"): a ledger holds a replay without
    # its original when only the replay's ref came to it (imported as `import_refs` does).
    here = Store.open(repo / ".ledger")
    other = repo.parent / "other"
    other.mkdir()
    there = Store.init(other / ".ledger")
    shutil.rmtree(there.root / "objects")
    shutil.copytree(here.root / "objects", there.root / "objects")
    ref = f"runs/{replay_id}"
    origin = {"origin": here.id, "origin_head": None}
    assert there.create_ref(ref, str(here.refs.get(ref)), op="import", **origin) is None
    shown = json.loads(run_ledger("show", "solo", "--json", cwd=other).stdout)
    assert shown["run"]["run_id"] == replay_id
    rows = json.loads(run_ledger("ls", "--replays", "--json", cwd=other).stdout)
    assert [(r["run_id"], r["replay_of"], r.get("original")) for r in rows] == [
        (replay_id, original, None)
    ]
    assert "replay" in run_ledger("ls", cwd=other, COLUMNS="200").stdout
    # Its code is the original's snapshot, still in the store: it replays without it.
    assert _replay(other, "solo")["original"] == replay_id
