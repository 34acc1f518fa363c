"""``ledger reindex`` folds the whole log in batches (``ledger.index.bulk``): the index it
writes is the one ``sync`` writes a line at a time, with a statement per batch, not per row."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

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
def ledger_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Recorded runs (each started, then sealed: two log lines), with names, tags, a metric
    series and a config; refs overwritten and deleted; a ref whose object is gone."""
    root = tmp_path_factory.mktemp("bulk") / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\n"
        "a = p.parse_args()\nfor s in range(3):\n    print(f'step {s} loss {a.lr / (s + 1)}')\n"
    )
    (root / ".gitignore").write_text(".ledger/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    for i, lr in enumerate(("0.1", "0.01")):
        r = run_ledger(
            "record", "--name", f"run{i}", "--tag", f"seed={i}", "--metric",
            r"step (?P<step>\d+) loss (?P<loss>\S+)", "--", "python", "train.py", "--lr", lr,
            cwd=root,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    store = Store.open(root / ".ledger")
    for i in range(12):
        store.set_ref(f"notes/n{i % 5}", store.put_json({"kind": "note", "schema": 1, "i": i}))
    store.delete_ref("notes/n2")
    gone = store.put_json({"kind": "note", "schema": 1, "gone": True})
    store.set_ref("notes/gone", gone)
    store.objects.path_of(gone).unlink()  # collected: no records row, no rows of its own
    return root / ".ledger"


def _index(store: Store, path: Path) -> tuple[Index, list[str]]:
    statements: list[str] = []
    conn = sqlite3.connect(path, isolation_level=None)
    conn.set_trace_callback(statements.append)
    return Index(store, conn=conn), statements


def test_rebuild_equals_the_fold_line_by_line(ledger_dir: Path, tmp_path: Path) -> None:
    store = Store.open(ledger_dir)
    line_by_line, _ = _index(store, tmp_path / "sync.sqlite")
    with line_by_line:
        assert line_by_line.sync() > 0  # an empty index folds every line, one at a time
        want = line_by_line.dump()
    rebuilt, _ = _index(store, tmp_path / "bulk.sqlite")
    with rebuilt:
        rebuilt.rebuild()
        got = rebuilt.dump()
    assert got == want
    assert len(got["runs"]) == 2 and len(got["run_text"]) == 2 and len(got["params"]) == 2
    # Every record an accepted move named is in ``records``: a run's running record too.
    assert len(got["records"]) == len({r[5] for r in got["log"] if r[5]}) - 1  # less the gone
    # The index the commands kept up as they ran is the same too.
    with Index(store) as kept:
        kept.sync()
        assert kept.dump() == want
    assert check_index(store) == []


class _Counting(sqlite3.Connection):
    """A connection that counts the statements it is asked to run (a trace callback would
    see each row of an ``executemany`` as a statement), and the rows each one is given."""

    calls: list[tuple[str, int]]

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self.calls.append((sql, 1))
        return super().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> sqlite3.Cursor:
        rows = list(seq)
        self.calls.append((sql, len(rows)))
        return super().executemany(sql, rows)


def test_rebuild_inserts_rows_in_batches(ledger_dir: Path, tmp_path: Path) -> None:
    store = Store.open(ledger_dir)
    conn = sqlite3.connect(tmp_path / "bulk.sqlite", isolation_level=None, factory=_Counting)
    conn.calls = []
    with Index(store, conn=conn) as index:
        conn.calls.clear()
        index.rebuild()
        dump = index.dump()
    rows = sum(len(v) for v in dump.values())
    inserts = [(sql, n) for sql, n in conn.calls if sql.lstrip().upper().startswith("INSERT")]
    # A statement per table (and a few for the meta rows and the full-text index), where a
    # fold line by line takes one per row.
    assert rows > 50
    assert len(inserts) <= 20, (len(inserts), rows)


def test_reindex_rebuilds_search_and_triggers(ledger_dir: Path) -> None:
    r = run_ledger("reindex", "--ledger", str(ledger_dir))
    assert r.returncode == 0, r.stderr
    store = Store.open(ledger_dir)
    with Index(store) as index:
        triggers = {
            r["name"] for r in index.query("SELECT name FROM sqlite_master WHERE type='trigger'")
        }
        assert {"run_text_ai", "tags_text_ai", "runs_text_au"} <= triggers
        indexes = {
            r["name"]
            for r in index.query(
                "SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
            )
        }
        assert {"runs_name", "params_key", "tags_key"} <= indexes
    r = run_ledger("ls", "--json", "--search", "seed=1", "--ledger", str(ledger_dir))
    assert r.returncode == 0 and '"run1"' in r.stdout and '"run0"' not in r.stdout, r.stderr
