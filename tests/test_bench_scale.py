"""The scale benchmark's fixture is an ordinary ledger: verify accepts it, reindex rebuilds the
index a command built, and ls/show find its runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _support import run_ledger

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_scale import generate, seed_run, unsynced
from ledger.index import Index
from ledger.store import Store


def test_generated_runs_verify_and_reindex(tmp_path: Path) -> None:
    root = tmp_path / ".ledger"
    store = Store.init(root)
    seed_run(root)
    with unsynced():
        ids = generate(store, 12)
    listed = run_ledger("ls", "--json", "--limit", "100", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert {r["run_id"] for r in json.loads(listed.stdout)} >= set(ids)
    shown = run_ledger("show", "--json", "exp7", cwd=tmp_path)
    assert json.loads(shown.stdout)["run"]["run_id"] == ids[7]
    verified = run_ledger("verify", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with Index(store) as index:
        before = index.dump()
        index.rebuild()
        assert index.dump() == before
