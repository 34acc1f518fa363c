"""ledger's own files are not the project's code: a report site, an exported package, a path
remote and an audit report that ``ledger`` wrote inside the working tree are not recorded as
untracked code by the next run, and ``--require-clean`` does not count them; ``ledger show``
summarises untracked files (count, size, the first few) and ``--all`` lists every one. Real git
repositories and real ``ledger`` subprocesses, as a user runs them."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from _support import run_ledger

CLAIMS = """\
paper: "made files"
claims:
  - id: loss
    metric: loss
    value: 0.5
    spread: 0.1
    spread_type: std
    n_seeds: 1
    split: test
    varied_sources: [seed]
    runs: {names: [base]}
"""


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@e"}
    env.update(GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@e")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _ok(*args: str, cwd: Path) -> str:
    out = run_ledger(*args, cwd=cwd)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text("print('loss 0.5')\n")
    (repo / "claims.yaml").write_text(CLAIMS)
    (repo / ".gitignore").write_text(".ledger/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    _ok("init", cwd=repo)
    return repo


def _untracked_lines(show: str) -> list[str]:
    return re.findall(r"^  untracked (.*)$", show, re.M)


def test_what_ledger_wrote_in_the_tree_is_not_untracked_code(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    metric = r"loss (?P<loss>\S+)"
    _ok("record", "--name", "base", "--metric", metric, "--", "python", "train.py", cwd=repo)
    _ok("remote", "add", "team", str(repo / "team-remote"), cwd=repo)
    _ok("push", "team", cwd=repo)
    _ok("report", "base", "-o", "site", cwd=repo)
    _ok("export", "base", "-o", "base.ledgerpkg", cwd=repo)
    audit = run_ledger("audit", "claims.yaml", "--html", "audit.html", cwd=repo)
    assert (repo / "audit.html").is_file(), audit.stdout + audit.stderr
    assert (repo / "team-remote" / "ledgerremote.json").is_file()
    assert (repo / "site" / "index.html").is_file() and (repo / "base.ledgerpkg").is_file()

    # The tree holds nothing but what ledger wrote: it is clean for --require-clean.
    out = run_ledger("record", "--require-clean", "--", "python", "train.py", cwd=repo)
    assert out.returncode == 0, out.stderr
    show = _ok("show", cwd=repo)
    assert _untracked_lines(show) == [], show
    code = json.loads(_ok("show", "--json", cwd=repo))["code"]
    assert code["untracked"] is None and code["dirty"] is False
    assert any("written by ledger" in n for n in code["notes"]), code["notes"]

    # A file of the user's beside them is still code, and so is a report the user edited.
    (repo / "notes.txt").write_text("mine\n")
    with open(repo / "audit.html", "a") as f:
        f.write("<!-- my edit -->\n")
    refused = run_ledger("record", "--require-clean", "--", "python", "train.py", cwd=repo)
    assert refused.returncode != 0
    assert "notes.txt" in refused.stderr and "audit.html" in refused.stderr
    assert "site/" not in refused.stderr and "team-remote" not in refused.stderr
    _ok("record", "--", "python", "train.py", cwd=repo)
    names = _untracked_lines(_ok("show", cwd=repo))
    assert names[1:] == ["audit.html", "notes.txt"], names


def test_show_summarises_untracked_files_and_all_lists_them(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for i in range(8):
        (repo / f"extra_{i}.py").write_text("x = 1\n" * (i + 1))  # 6 * (1 + ... + 8) bytes
    _ok("record", "--", "python", "train.py", cwd=repo)

    show = _ok("show", cwd=repo)
    lines = _untracked_lines(show)
    assert lines[0] == "8 files, 216 B; the first 5 below, --all lists every one", show
    assert lines[1:] == [f"extra_{i}.py" for i in range(5)]

    every = _untracked_lines(_ok("show", "--all", cwd=repo))
    assert every[0] == "8 files, 216 B"
    assert every[1:] == [f"extra_{i}.py" for i in range(8)]
    # typer's command (which takes the forms the fast parser leaves to it) prints the same
    from typer.testing import CliRunner

    from ledger.cli.app import app

    got = CliRunner().invoke(app, ["show", "--all", "-L", str(repo / ".ledger")])
    assert got.exit_code == 0, got.output
    assert _untracked_lines(got.stdout) == every
    info = json.loads(_ok("show", "--json", cwd=repo))
    assert info["code_files"]["untracked_bytes"] == 216
    assert len(info["code_files"]["untracked"]) == 8
