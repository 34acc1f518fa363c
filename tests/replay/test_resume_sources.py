"""A replay rebuilds the file its original resumed from (issue #32, point 9): a checkpoint
pointer in an ignored folder is not in the code snapshot, so a replay of the resumed run
crashed with FileNotFoundError. ``load_checkpoint(source=...)`` stores the pointer with the
load event; the replay writes it back into the workspace, or refuses before running when it
cannot (naming the file and ``--input``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

from ledger.run.find import load_run
from ledger.store import Store

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch]

SCRIPT = """
import json, os, sys
import torch
from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

if sys.argv[1] == "save":
    info = save_checkpoint({"w": torch.arange(3.0)}, step=1)
    os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
    with open(sys.argv[2], "w") as f:
        json.dump({"checkpoint": info.oid}, f)
else:
    with open(sys.argv[2]) as f:
        target = json.load(f)["checkpoint"]
    state = load_checkpoint(target, source=sys.argv[2]).state
    print("resumed", state["w"].tolist(), flush=True)
"""


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / ".gitignore").write_text(".ledger/\nck/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        _git(root, *args)
    init_ledger(root)
    return root


def _record(root: Path, *args: str) -> str:
    r = run_ledger("record", "--json", "--", sys.executable, "train.py", *args, cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(root: Path, run_id: str) -> tuple[int, dict[str, Any], str]:
    r = run_ledger("replay", run_id, "--json", cwd=root)
    body = json.loads(r.stdout[r.stdout.index("{\n") :]) if "{\n" in r.stdout else {}
    return r.returncode, body, r.stderr


def test_a_pointer_in_an_ignored_folder_is_rebuilt(project: Path) -> None:
    _record(project, "save", "ck/pointer.json")
    resumed = _record(project, "load", "ck/pointer.json")
    _, run = load_run(Store.open(project / ".ledger"), resumed)
    (load,) = [e for e in run.checkpoints if e.event == "load"]
    pointer = (project / "ck" / "pointer.json").read_bytes()
    assert load.source == "ck/pointer.json"
    assert Store.open(project / ".ledger").objects.get_bytes(load.source_digest or "") == pointer

    code, verdict, err = _replay(project, resumed)
    assert (code, verdict.get("outcome")) == (0, "reproduced"), (verdict, err[-2000:])
    assert verdict["settings"]["compared"]["stdout"] is True  # what it printed came back
    notes = [n for n in verdict["notes"] if "the file the original run resumed from" in n]
    assert notes and notes[0].startswith("ck/pointer.json, the file the original run resumed")


def test_a_tracked_pointer_is_left_as_the_code_has_it(project: Path) -> None:
    _record(project, "save", "ck/pointer.json")
    (project / "kept").mkdir()
    (project / "kept" / "pointer.json").write_bytes((project / "ck" / "pointer.json").read_bytes())
    _git(project, "add", "kept")
    _git(project, "commit", "-qm", "pointer")
    resumed = _record(project, "load", "kept/pointer.json")
    code, verdict, err = _replay(project, resumed)
    assert (code, verdict.get("outcome")) == (0, "reproduced"), (verdict, err[-2000:])
    assert not any("resumed from" in n for n in verdict["notes"])


def test_an_absolute_pointer_that_is_gone_is_refused_before_running(
    project: Path, tmp_path: Path
) -> None:
    pointer = tmp_path / "elsewhere" / "pointer.json"
    _record(project, "save", str(pointer))
    resumed = _record(project, "load", str(pointer))
    pointer.unlink()
    store = Store.open(project / ".ledger")
    before = len(json.loads(run_ledger("ls", "--json", cwd=project).stdout))
    code, verdict, err = _replay(project, resumed)
    assert code == 7 and not verdict, err[-2000:]
    assert f"resumed from {pointer}, which no longer exists" in err
    assert f"--input {pointer}" in err and "Traceback" not in err
    # Refused before the command ran: no replay run was recorded.
    assert len(json.loads(run_ledger("ls", "--json", cwd=project).stdout)) == before
    assert store.refs.get(f"runs/{resumed}") is not None


def test_an_absolute_pointer_still_there_is_read_where_it_lies(
    project: Path, tmp_path: Path
) -> None:
    pointer = tmp_path / "elsewhere" / "pointer.json"
    _record(project, "save", str(pointer))
    resumed = _record(project, "load", str(pointer))
    code, verdict, err = _replay(project, resumed)
    assert (code, verdict.get("outcome")) == (0, "reproduced"), (verdict, err[-2000:])
    assert not any("resumed from" in n for n in verdict["notes"])
