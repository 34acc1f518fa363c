"""Replay never writes outside its workspace, and removes the workspace when it fails.

Real git repositories, real `python -m ledger` processes. The user's files next to the
repository are the canary: after every replay they must hold what the user left there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.run.find import load_run, run_ref
from ledger.store import Store

# Reads every path given on the command line and prints one number derived from their bytes:
# a replay that reads other data prints another number.
READER = """
import hashlib, sys
h = hashlib.sha256()
for p in sys.argv[1:]:
    h.update(open(p, "rb").read())
print(f"epoch 0 loss {int(h.hexdigest()[:8], 16) / 2**32!r}")
"""
METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+)"


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def _repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "read.py").write_text(READER)
    (root / ".gitignore").write_text(".ledger/\nout/\n")
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    return root


def _record(repo: Path, *args: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", *args, cwd=repo)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(repo: Path, run_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ledger("replay", run_id, *args, cwd=repo)


def _verdict(r: subprocess.CompletedProcess[str]) -> dict[str, object]:
    return dict(json.loads(r.stdout[r.stdout.index("{\n") :]))


def test_inputs_beside_the_repository_are_restored_inside_the_workspace(tmp_path: Path) -> None:
    # base/u/v/proj reads base/u/v/beside/d.txt and base/u/far/e.txt; the replay workspace is
    # made in base/u, where `code/../../far` used to be the user's own base/u/far.
    base = tmp_path / "u"
    repo = _repo(base / "v" / "proj")
    (base / "v" / "beside").mkdir()
    (base / "v" / "beside" / "d.txt").write_text("d version 1\n")
    (base / "far").mkdir()
    (base / "far" / "e.txt").write_text("e version 1\n")
    args = ["../beside/d.txt", "../../far/e.txt"]
    run_id = _record(
        repo, *[a for p in args for a in ("--input", p)], "--", sys.executable, "read.py", *args
    )
    # The user moves on: both files get new content after the run.
    (base / "v" / "beside" / "d.txt").write_text("d version 2\n")
    (base / "far" / "e.txt").write_text("e version 2\n")
    r = _replay(repo, run_id, "--json", "--workspace-dir", str(base))
    assert (base / "v" / "beside" / "d.txt").read_text() == "d version 2\n"
    assert (base / "far" / "e.txt").read_text() == "e version 2\n"
    assert r.returncode == 0, r.stderr
    v = _verdict(r)
    assert v["outcome"] == "reproduced"  # the replay read version 1, from its workspace
    assert any("lies outside the repository" in n for n in v["notes"])  # type: ignore[union-attr]
    # Nothing is left next to the user's data: the workspace is gone.
    assert sorted(p.name for p in base.iterdir()) == ["far", "v"]


def test_input_under_a_symlink_of_the_code_is_checked_in_place_never_written(
    tmp_path: Path,
) -> None:
    # `data` is a committed symlink to a dataset kept outside the repository.
    dataset = tmp_path / "datasets" / "d1"
    dataset.mkdir(parents=True)
    (dataset / "train.txt").write_text("rows v1\n")
    repo = _repo(tmp_path / "proj")
    os.symlink(dataset, repo / "data")
    _git(repo, "add", "data")
    _git(repo, "commit", "-qm", "data link")
    run_id = _record(
        repo, "--input", "data/train.txt", "--", sys.executable, "read.py", "data/train.txt"
    )

    r = _replay(repo, run_id, "--json")
    assert r.returncode == 0, r.stderr
    assert any("used in place" in n for n in _verdict(r)["notes"])  # type: ignore[union-attr]

    # The dataset changed since: replay says so and does not roll it back through the link.
    (dataset / "train.txt").write_text("rows v2\n")
    r = _replay(repo, run_id)
    assert r.returncode == 7, r.stderr
    assert "no longer holds the recorded data" in r.stderr and "Traceback" not in r.stderr
    assert (dataset / "train.txt").read_text() == "rows v2\n"
    (dataset / "train.txt").unlink()  # gone altogether: the same error, not a crash
    r = _replay(repo, run_id)
    assert r.returncode == 7 and "no longer holds the recorded data" in r.stderr, r.stderr
    assert not (dataset / "train.txt").exists()


def _craft_run(store: Store, run_id: str, edit_contract: object) -> str:
    """A copy of a run with an edited contract, sealed as a run of its own (a crafted ledger;
    a sealed run is never sealed again: docs/format.md, "Transitions"). Returns its id."""
    _, run = load_run(store, run_id)
    contract = store.get_json(run.contract)
    edit_contract(contract)  # type: ignore[operator]
    crafted = run_id[:-1] + ("0" if run_id[-1] != "0" else "1")
    data = run.to_json() | {"run_id": crafted}
    data["contract"] = store.put_json(contract)
    store.set_ref(run_ref(crafted), store.put_json(data), op="seal", status=run.status)
    return crafted


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"path": "../../escaped.txt", "type": "file"}], "is malformed"),
        (
            [
                {"path": "d", "type": "dir"},
                {"path": "s", "type": "symlink", "link": "d"},
                {"path": "s/x", "type": "file"},
            ],
            "symlink",
        ),
        ([{"path": "up", "type": "symlink", "link": "../.."}], "points outside it"),
    ],
)
def test_crafted_manifest_entries_never_write_outside(
    tmp_path: Path, entries: list[dict[str, str]], message: str
) -> None:
    repo = _repo(tmp_path / "proj", {"data/a.txt": "a\n"})
    run_id = _record(repo, "--input", "data", "--", sys.executable, "read.py", "data/a.txt")
    store = Store.open(repo / ".ledger")
    content = store.objects.put_bytes(b"pwned\n")
    rows = []
    for e in entries:
        row: dict[str, object] = {"path": e["path"], "type": e["type"], "size": 6, "mode": 0o644}
        if e["type"] == "symlink":
            row["digest"] = store.objects.put_bytes(e["link"].encode())
        else:
            row["digest"] = content if e["type"] == "file" else None
        rows.append(row)
    manifest = {
        "kind": "data-manifest",
        "schema": 1,
        "dir_digest": content,
        "n_files": len(rows),
        "n_bytes": 6,
        "entries": rows,
    }
    manifest_oid = store.put_json(manifest)

    def edit(contract: dict[str, list[dict[str, object]]]) -> None:
        contract["inputs"][0]["files"] = manifest_oid

    run_id = _craft_run(store, run_id, edit)
    ws = tmp_path / "ws" / "a" / "b"
    ws.mkdir(parents=True)
    r = _replay(repo, run_id, "--workspace-dir", str(ws))
    assert r.returncode == 7, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.startswith("ledger: error:")
    assert message in r.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == b"pwned\n"]
    assert written == []
    assert list(ws.iterdir()) == []  # and the failed replay removed its workspace


def test_a_patch_that_writes_through_its_own_symlink_is_refused(tmp_path: Path) -> None:
    from ledger.capture.code import materialize_code, snapshot_code
    from ledger.errors import ReplayError

    repo = _repo(tmp_path / "proj")
    outside = tmp_path / "outside"
    outside.mkdir()
    store = Store.open(repo / ".ledger")
    snap = snapshot_code(repo, store)
    patch = (
        "diff --git a/esc b/esc\n"
        "new file mode 120000\n"
        "index 0000000..1111111\n"
        "--- /dev/null\n"
        "+++ b/esc\n"
        "@@ -0,0 +1 @@\n"
        f"+{outside}\n"
        "\\ No newline at end of file\n"
        "diff --git a/esc/pwn.txt b/esc/pwn.txt\n"
        "new file mode 100644\n"
        "index 0000000..2222222\n"
        "--- /dev/null\n"
        "+++ b/esc/pwn.txt\n"
        "@@ -0,0 +1 @@\n"
        "+pwned\n"
    )
    crafted = snap.model_copy(update={"patch": store.objects.put_bytes(patch.encode())})
    with pytest.raises(ReplayError):
        materialize_code(crafted, store, tmp_path / "dest")
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "dest").exists()


def test_confined_writes_refuse_symlinks_dotdot_and_absolute_paths(tmp_path: Path) -> None:
    from ledger.capture import confine

    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")
    os.symlink(outside / "f", root / "d" / "leaf")

    def fill(f: object) -> None:
        f.write(b"x")  # type: ignore[attr-defined]

    for rel in ("link/f", "link/sub/f", "../outside/f", "/abs", "d/../../outside/f", "d/./f", ""):
        with pytest.raises(confine.OutsideError):
            confine.write_file(root, rel, fill)
    with pytest.raises(confine.OutsideError):
        confine.write_file(root, "d/leaf", fill)  # an existing symlink is not written through
    with pytest.raises(confine.OutsideError):
        confine.make_dirs(root, "link/sub")
    assert list(outside.iterdir()) == []
    confine.write_file(root, "d/leaf", fill, replace=True)  # replaced, not followed
    assert not (root / "d" / "leaf").is_symlink() and (root / "d" / "leaf").read_bytes() == b"x"
    assert list(outside.iterdir()) == []
    assert confine.blocked_by(root, "link/x/y") == "link"
    assert confine.blocked_by(root, "d/new/y") is None


def test_every_failure_removes_the_workspace_unless_kept(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "proj", {"data.txt": "rows\n"})
    run_id = _record(repo, "--input", "data.txt", "--", sys.executable, "read.py", "data.txt")
    store = Store.open(repo / ".ledger")
    from ledger._hashing import hash_file

    store.objects.delete(hash_file(repo / "data.txt"))  # gc took the input
    ws = tmp_path / "ws"
    ws.mkdir()
    r = _replay(repo, run_id, "--workspace-dir", str(ws))
    assert r.returncode == 7 and "cannot restore input data.txt" in r.stderr
    assert list(ws.iterdir()) == []
    r = _replay(repo, run_id, "--workspace-dir", str(ws), "--keep-workspace")
    assert r.returncode == 7
    kept = list(ws.iterdir())
    assert len(kept) == 1 and str(kept[0]) in r.stderr
    # A failure after the workspaces are built: --seed-arg appends a flag the script does not
    # take, so every seed's run fails and no verdict can be given.
    other = _record(repo, "--", sys.executable, "read.py")
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    r = _replay(repo, other, "--workspace-dir", str(ws2), "--mode", "seeds", "--seed-arg", "--seed")
    assert r.returncode == 7 and "replays produced metric" in r.stderr, r.stderr
    assert list(ws2.iterdir()) == []


@pytest.mark.parametrize(
    ("root", "cwd", "inputs", "expected"),
    [
        ("/home/u/proj", ".", ["data.csv", "sub/../x"], "code"),
        ("/home/u/proj", ".", ["../beside/d.txt"], "fs/proj"),
        ("/home/u/proj", ".", ["../beside/d.txt", "../../far/e.txt"], "fs/u/proj"),
        ("/home/u/proj", "src", ["../data.csv"], "code"),
        ("/home/u/proj", "src", ["../../proj/data.csv"], "fs/proj"),
        ("/p", ".", ["../../../x"], "code"),  # above /: checked in place, not laid out
        ("/a/../b", ".", ["../../x"], None),  # a crafted root never places the code outside
    ],
)
def test_code_location_keeps_relative_inputs_inside(
    root: str, cwd: str, inputs: list[str], expected: str | None
) -> None:
    from ledger.errors import ReplayError
    from ledger.records.code import CodeSnapshot
    from ledger.records.data import InputDigest
    from ledger.replay.workspace import code_location

    code = CodeSnapshot(in_repo=True, root=root, cwd_relpath=cwd)
    digests = [
        InputDigest(
            path=p, abspath="/x", kind="file", digest="b3:" + "0" * 64, n_files=1, n_bytes=0
        )
        for p in inputs
    ]
    if expected is None:
        with pytest.raises(ReplayError):
            code_location(code, digests)
    else:
        assert code_location(code, digests) == expected
