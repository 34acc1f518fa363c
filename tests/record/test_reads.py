"""The files a recorded program read, as a user meets them: a training script that reads a
gitignored data file is told at seal which file a replay will not have and how to declare it;
``--auto-inputs`` stores it so that the replay reproduces; a replay that fails for want of it
names it. Real git repositories, real ``ledger record`` and ``ledger replay`` subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger

TRAIN = """\
import json, os, subprocess, sys
import multiprocessing as mp

def worker(path):
    with open("made.txt", "w") as f:  # another process of the run writes it...
        f.write("made")
    with open(path) as f:  # a forked worker, which ends with os._exit
        return len(f.read())

if __name__ == "__main__":
    vals = [float(x) for x in open("data/train.txt")]
    with open("cache.json", "w") as f:  # written by the run, then read: its own file
        json.dump({"n": len(vals)}, f)
    json.load(open("cache.json"))
    with mp.get_context("fork").Pool(1) as pool:
        pool.map(worker, ["data/labels.txt"])
    open("made.txt").read()  # ...and this one reads it
    child = "print(open(sys.argv[1]).read().strip())"
    subprocess.run([sys.executable, "-c", "import sys; " + child, os.environ["EXTRA"]], check=True)
    open("declared.txt").read()
    print(f"loss: {sum(vals)!r}")
"""


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@e"}
    env.update(GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@e")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _project(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "proj"
    (repo / "data").mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    (repo / "declared.txt").write_text("declared\n")
    (repo / ".gitignore").write_text("data/\n.ledger/\n*.json\nmade.txt\ndeclared.txt\n")
    (repo / "data" / "train.txt").write_text("1.5\n2.25\n")
    (repo / "data" / "labels.txt").write_text("a b\n")
    outside = tmp_path / "elsewhere" / "vocab.txt"
    outside.parent.mkdir()
    outside.write_text("vocab\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    return repo, outside


def _record(repo: Path, outside: Path, *opts: str) -> subprocess.CompletedProcess[str]:
    return run_ledger(
        "record", "--input", "declared.txt", *opts, "--", "python", "train.py",
        cwd=repo, EXTRA=str(outside),
    )  # fmt: skip


def _newest(repo: Path) -> dict[str, object]:
    out = run_ledger("show", "--json", _run_id(repo), cwd=repo)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["run"]  # type: ignore[no-any-return]


def _run_id(repo: Path) -> str:
    out = run_ledger("ls", "--json", cwd=repo)
    return str(json.loads(out.stdout)[0]["run_id"])


def _reads(repo: Path, run: dict[str, object]) -> dict[str, str]:
    from ledger.store import Store

    store = Store.open(repo / ".ledger")
    record = store.get_json(str(run["reads"]))
    assert record["kind"] == "reads"
    return {f["path"]: f["status"] for f in record["files"]}


def test_a_gitignored_data_file_is_named_at_seal_with_the_input_fix(tmp_path: Path) -> None:
    repo, outside = _project(tmp_path)
    out = _record(repo, outside)
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert "the run read 3 files that a replay will not have" in err, err
    assert "data/train.txt (gitignored): add --input data/train.txt" in err
    # read only by the forked worker, and only by the Python child
    assert "data/labels.txt (gitignored): add --input data/labels.txt" in err
    assert f"{outside} (outside the repository): add --input {outside}" in err
    assert "--auto-inputs" in err
    # the run's own file, a declared input and the code are not named
    for own in ("cache.json", "made.txt", "declared.txt", "train.py"):
        assert own not in err

    run = _newest(repo)
    reads = _reads(repo, run)
    assert reads["data/train.txt"] == "gitignored"
    assert reads[str(outside)] == "outside"
    assert reads["train.py"] == "code"
    assert reads["declared.txt"] == "input"
    assert reads["made.txt"] == "written"  # the run made it: a replay makes it again
    assert "cache.json" not in reads  # written by the process that read it
    assert not any("site-packages" in p or p.startswith("/usr/") for p in reads)
    assert any("data/train.txt (gitignored)" in n for n in run["notes"])  # type: ignore[attr-defined]


def test_auto_inputs_stores_what_was_read_and_the_replay_reproduces(tmp_path: Path) -> None:
    repo, outside = _project(tmp_path)
    out = _record(repo, outside, "--auto-inputs")
    assert out.returncode == 0, out.stderr
    assert "a replay will not have" not in out.stderr, out.stderr
    run = _newest(repo)
    assert any("--auto-inputs: 3 files" in n for n in run["notes"])  # type: ignore[attr-defined]
    run_id = _run_id(repo)
    # the data leaves the working tree: only the store has it now
    (repo / "data" / "train.txt").unlink()
    (repo / "data" / "labels.txt").unlink()
    replay = run_ledger("replay", run_id, cwd=repo, EXTRA=str(outside))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "REPRODUCED (bitwise)" in replay.stdout


def test_a_replay_that_fails_names_the_file_its_original_read(tmp_path: Path) -> None:
    repo, outside = _project(tmp_path)
    assert _record(repo, outside).returncode == 0
    replay = run_ledger("replay", _run_id(repo), cwd=repo, EXTRA=str(outside))
    assert replay.returncode != 0
    text = replay.stdout + replay.stderr
    assert "NOT-REPRODUCED" in text
    # what differs first, then the files it lacked, which say why
    assert "exit status differs: original succeeded (0), replay failed (1)" in text, text
    assert "the original read files this replay did not have (2): data/labels.txt, " in text
    assert "data/train.txt" in text and "--input data/labels.txt" in text, text
    # the file outside the repository is still where the original read it: not named
    assert "did not have (2): data/labels.txt, data/train.txt;" in text


HOOKED = """\
import os, pathlib
open("a.txt").read()
os.chdir("sub")
open("a.txt").read()  # the same name, another folder: sub/a.txt
os.close(os.open(b"../b.txt", os.O_RDONLY))  # os.open, a bytes name
pathlib.Path("c.txt").read_text()
with open("new.txt", "w") as f:  # written first, then read: the process's own
    f.write("x")
open("new.txt").read()
open(os.__file__).read()  # the standard library: left out
open("../a.txt", "rb").read()  # seen already, by another name
"""


def test_the_hook_sees_each_file_read_once_by_its_full_name(tmp_path: Path) -> None:
    """The start-up hook alone, in a real Python process: relative names follow os.chdir,
    os.open and bytes names are seen, writes and the interpreter's files are not."""
    from _support import subprocess_env

    from ledger.capture.reads import collect
    from ledger.run.record import HOOK_DIR

    work = tmp_path / "w"
    (work / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/a.txt", "sub/c.txt"):
        (work / name).write_text(name)
    (work / "prog.py").write_text(HOOKED)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = subprocess_env(LEDGER_RUN_DIR=str(run_dir), LEDGER_HOOK_DIR=str(HOOK_DIR))
    env["PYTHONPATH"] = os.pathsep.join([str(HOOK_DIR), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "prog.py"], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    paths, notes = collect(run_dir)
    assert notes == []
    assert paths == [str(work / n) for n in ("a.txt", "b.txt", "prog.py", "sub/a.txt", "sub/c.txt")]


def test_a_credential_file_read_is_named_and_never_stored(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / "data").mkdir(parents=True)
    (repo / "train.py").write_text(
        "open('.env').read()\nprint(open('data/x.txt').read().strip())\n"
    )
    (repo / ".env").write_text("API_TOKEN=sk-live-0123456789abcdef0123\n")
    (repo / "data" / "x.txt").write_text("data\n")
    (repo / ".gitignore").write_text(".env\ndata/\n.ledger/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    out = run_ledger("record", "--auto-inputs", "--", "python", "train.py", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert "credential files that a replay will not have and that ledger never stores" in out.stderr
    assert "--input .env" not in out.stderr
    shown = run_ledger("show", "--json", cwd=repo)
    inputs = [i["path"] for i in json.loads(shown.stdout)["contract"]["inputs"]]
    assert inputs == ["data/x.txt"]  # the data file is stored; the credential file is not
