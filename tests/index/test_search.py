"""``ledger ls --search``: full-text search over names, tags, commands and notes, as a user types
it, on runs recorded by ``ledger record``."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.index import Index
from ledger.index.consistency import check_index
from ledger.store import Store


def _git(root: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three recorded runs: names, tags and commands differ; the third one changes its input
    while it runs, which ``record`` keeps as a note."""
    root = tmp_path_factory.mktemp("search") / "proj"
    root.mkdir()
    (root / "train.py").write_text("import sys\nprint('args', sys.argv[1:])\n")
    (root / "data.txt").write_text("v1\n")
    (root / "touch.py").write_text("open('data.txt', 'a').write('more\\n')\n")
    (root / ".gitignore").write_text(".ledger/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    for args in (
        [
            "--name",
            "relu-small",
            "--tag",
            "dataset=cifar10",
            "--",
            "python",
            "train.py",
            "--lr",
            "0.1",
        ],
        [
            "--name",
            "gelu-large",
            "--tag",
            "dataset=imagenet",
            "--tag",
            "owner=ada",
            "--",
            "python",
            "train.py",
            "--optimizer",
            "adamw",
        ],
        ["--name", "drift", "--input", "data.txt", "--", "python", "touch.py"],
    ):
        r = run_ledger("record", *args, cwd=root)
        assert r.returncode == 0, r.stderr
    return root


def _names(repo: Path, *query: str) -> list[str]:
    r = run_ledger("ls", "--json", *query, cwd=repo)
    assert r.returncode == 0, r.stderr
    return sorted(row["name"] for row in json.loads(r.stdout))


def test_search_finds_runs_by_name_tag_command_and_note(repo: Path) -> None:
    assert _names(repo, "--search", "relu") == ["relu-small"]  # relu-small is two words
    assert _names(repo, "--search", "relu large") == []  # every word, in one run
    assert _names(repo, "--search", "sigmoid") == []
    assert _names(repo, "--search", "gelu*") == ["gelu-large"]
    assert _names(repo, "--search", "cifar10") == ["relu-small"]
    assert _names(repo, "--search", "owner") == ["gelu-large"]  # a tag's key
    assert _names(repo, "--search", "adamw") == ["gelu-large"]  # the command
    # What FTS5 would not take bare is looked for as the phrase it spells, as copied.
    assert _names(repo, "--search", "train.py") == ["gelu-large", "relu-small"]
    assert _names(repo, "--search", "dataset=cifar10") == ["relu-small"]
    assert _names(repo, "--search", "--lr 0.1") == ["relu-small"]
    assert _names(repo, "--search", "changed") == ["drift"]  # the note record kept
    assert _names(repo, "--search", "name:cifar10") == []  # one column only
    assert _names(repo, "--search", "tags:cifar10 OR command:touch") == ["drift", "relu-small"]
    assert _names(repo, "--search", "train NOT adamw") == ["relu-small"]
    # With the other filters, and on the typer path (--help-free forms take the fast one).
    assert _names(repo, "--search", "train", "--tag", "owner=ada") == ["gelu-large"]
    assert _names(repo, "--search", "train", "-w", "name != relu-small") == ["gelu-large"]


def test_search_in_the_table_on_both_parsers(repo: Path) -> None:
    fast = run_ledger("ls", "--search", "imagenet", cwd=repo)
    typer_path = run_ledger("ls", "--search=imagenet", "--limit", "5", cwd=repo)
    assert fast.returncode == typer_path.returncode == 0, fast.stderr + typer_path.stderr
    assert "gelu-large" in fast.stdout and "relu-small" not in fast.stdout
    assert fast.stdout == typer_path.stdout


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ('"unclosed', "unterminated string"),
        ("nosuchcolumn:x", "no such column: nosuchcolumn"),
        ("AND", "syntax error"),
        ("   ", "needs words"),
    ],
)
def test_a_malformed_query_is_a_usage_error(repo: Path, query: str, said: str) -> None:
    r = run_ledger("ls", "--search", query, cwd=repo)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert said in r.stderr and "FTS5 query syntax" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_an_edited_search_index_cannot_show_a_run_and_verify_reports_it(repo: Path) -> None:
    store = Store.open(repo / ".ledger")
    with Index(store) as index:
        index.sync()
        # Someone rewrites relu-small's text (the triggers keep the words in step): search
        # now picks it for "imagenet", but its record does not say so.
        index.db.execute("UPDATE run_text SET tags = 'dataset=imagenet' WHERE name = 'relu-small'")
    try:
        assert _names(repo, "--search", "imagenet") == ["gelu-large"]
        problems = check_index(store)
        assert any(p.subject.startswith("run_text[") for p in problems), problems
    finally:
        assert run_ledger("reindex", cwd=repo).returncode == 0
    assert check_index(store) == []
    # The words themselves edited behind run_text's back: FTS5's own check finds it.
    with Index(store) as index:
        index.db.execute(
            "INSERT INTO run_text_fts(rowid, name) SELECT rowid, 'planted' FROM run_text LIMIT 1"
        )
    try:
        problems = check_index(store)
        assert [p.subject for p in problems] == ["run_text_fts"], problems
    finally:
        assert run_ledger("reindex", cwd=repo).returncode == 0


def test_tags_written_later_are_found_by_search(store: Store) -> None:
    """Whatever writes a run's ``tags`` rows (a tag log entry folded later, say) changes what
    search finds: the run's text follows the ``tags`` table and ``runs.name``."""
    with Index(store) as index:
        db = index.db
        db.execute("INSERT INTO runs (ref, run_id, name) VALUES ('runs/r1', 'r1', 'old-name')")
        db.execute("INSERT INTO run_text (run_id, name) VALUES ('r1', 'old-name')")

        def found(q: str) -> list[str]:
            sql = (
                "SELECT run_id FROM run_text WHERE rowid IN "
                "(SELECT rowid FROM run_text_fts WHERE run_text_fts MATCH ?)"
            )
            return [str(r[0]) for r in db.execute(sql, (q,)).fetchall()]

        db.execute("INSERT INTO tags VALUES ('r1', 'stage', 'ablation')")
        assert found("ablation") == ["r1"]
        db.execute("UPDATE tags SET value = 'final' WHERE run_id = 'r1'")
        assert found("ablation") == [] and found("stage final") == ["r1"]
        db.execute("UPDATE runs SET name = 'renamed' WHERE run_id = 'r1'")
        assert found("renamed") == ["r1"] and found("old") == []
        db.execute("DELETE FROM tags WHERE run_id = 'r1'")
        assert found("final") == []
        assert db.execute("SELECT tags FROM run_text").fetchone() == (None,)


def test_no_command_loads_sqlite_utils(repo: Path) -> None:
    """``ls``, ``--search``, a fold of new runs by ``ls``, and the whole fold of ``reindex``
    and ``verify`` (``ledger.index.bulk``) stay on ``sqlite3``: sqlite-utils, with pandas and
    numpy when installed, cost each 0.3 s of start-up (bench/bench_scale.py)."""
    assert (
        run_ledger("record", "--name", "late", "--", "python", "-c", "pass", cwd=repo).returncode
        == 0
    )
    for args in (["ls"], ["ls", "--search", "late"], ["show", "late"], ["reindex"], ["verify"]):
        r = run_ledger(*args, cwd=repo, PYTHONPROFILEIMPORTTIME="1")
        assert r.returncode == 0, r.stdout + r.stderr[-2000:]
        imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", r.stderr, re.M))
        assert "ledger.index.db" in imported, "no import timings"
        heavy = {m for m in imported if m.split(".")[0] in ("sqlite_utils", "pandas", "numpy")}
        assert not heavy, args


def test_the_web_views_search_box(repo: Path) -> None:
    from ledger.ui.server import route

    store = Store.open(repo / ".ledger")
    status, _, body = route(store, "/index.html?search=imagenet")
    page = body.decode()
    assert status == 200 and "gelu-large" in page and "relu-small" not in page
    assert 'name="search" type="search" value="imagenet"' in page  # the box keeps the query
    status, _, body = route(store, "/index.html?search=%22unclosed")
    page = body.decode()
    assert status == 200 and 'id="error"' in page and "unterminated string" in page
    assert "FTS5 query syntax" in page
