"""The query tables (params, metrics, checkpoints, tags, views): derived, rebuildable, verified."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from _support import subprocess_env
from _ui_lab import add_run

from ledger.index import Index
from ledger.index.consistency import check_index
from ledger.store import Store

CKPT = "b3:" + "ab" * 32


def _ledger(store: Store) -> None:
    add_run(
        store,
        "20261130T060000.000000Z-00000001",
        {"train/loss": [(0, 2.0), (1, 1.0), (2, 0.5)], "val/acc": [(0, 0.1), (2, 0.7)]},
        name="base",
        tags={"paper": "doe2026"},
        config={"optim": {"lr": 0.1, "name": "sgd"}, "epochs": 3, "amp": True, "layers": [2, 3]},
        checkpoints=[
            {
                "event": "save",
                "checkpoint_digest": CKPT,
                "step": 2,
                "bytes_total": 100,
                "bytes_new": 40,
            }
        ],
    )
    add_run(
        store,
        "20261130T060100.000000Z-00000002",
        {"train/loss": [(0, 2.0), (1, 1.5)]},
        name="small-lr",
        config={"optim": {"lr": 0.001, "name": "adam"}, "epochs": 3},
        minute=1,
    )
    add_run(
        store,
        "20261130T060200.000000Z-00000003",
        {"train/loss": [(0, 2.0), (1, 1.0), (2, 0.5)]},
        name="base",
        replay_of="20261130T060000.000000Z-00000001",
        config={"optim": {"lr": 0.1, "name": "sgd"}, "epochs": 3, "amp": True, "layers": [2, 3]},
        minute=2,
    )


def test_tables_hold_what_the_records_say(store: Store) -> None:
    _ledger(store)
    with Index(store) as index:
        index.sync()
        params = index.query(
            "SELECT key, value, num, type FROM params WHERE run_id LIKE '%1' ORDER BY key"
        )
        assert params == [
            {"key": "amp", "value": "true", "num": None, "type": "bool"},
            {"key": "epochs", "value": "3", "num": 3.0, "type": "int"},
            {"key": "layers", "value": "[2, 3]", "num": None, "type": "list"},
            {"key": "optim.lr", "value": "0.1", "num": 0.1, "type": "float"},
            {"key": "optim.name", "value": "sgd", "num": None, "type": "str"},
        ]
        loss = index.query("SELECT * FROM metrics WHERE run_id LIKE '%1' AND name='train/loss'")
        assert len(loss) == 1
        assert (loss[0]["first"], loss[0]["last"], loss[0]["min"], loss[0]["max"]) == (
            2.0,
            0.5,
            0.5,
            2.0,
        )
        assert loss[0]["count"] == 3 and loss[0]["best"] == 0.5 and loss[0]["main"] == 1
        acc = index.query("SELECT best FROM metrics WHERE name='val/acc'")
        assert acc == [{"best": 0.7}]  # higher is better for accuracy
        ck = index.query("SELECT step, digest, bytes_total, bytes_new FROM checkpoints")
        assert ck == [{"step": 2, "digest": CKPT, "bytes_total": 100, "bytes_new": 40}]
        assert index.query("SELECT * FROM tags") == [
            {"run_id": "20261130T060000.000000Z-00000001", "key": "paper", "value": "doe2026"}
        ]
        # The views: originals (with replay counts), the common joins.
        originals = index.query("SELECT run_id, replays FROM originals ORDER BY run_id")
        assert [r["replays"] for r in originals] == [1, 0]
        fast = index.query(
            "SELECT DISTINCT run_id FROM run_params WHERE key='optim.lr' AND num > 0.01"
        )
        assert {r["run_id"][-1] for r in fast} == {"1", "3"}
        assert index.query(
            "SELECT run_name, last FROM run_metrics WHERE metric='train/loss' AND run_id LIKE '%2'"
        ) == [{"run_name": "small-lr", "last": 1.5}]
        assert index.query("SELECT original, replay FROM replay_verdicts") == [
            {
                "original": "20261130T060000.000000Z-00000001",
                "replay": "20261130T060200.000000Z-00000003",
            }
        ]


def test_rebuild_gives_the_same_tables_and_a_sealed_run_replaces_its_running_rows(
    store: Store,
) -> None:
    _ledger(store)
    four = "20261130T060300.000000Z-00000004"
    with Index(store) as index:
        index.sync()
        # A run's `running` record, then its sealed one: the sealed record's rows replace them.
        running = add_run(
            store, four, config={"optim": {"lr": 0.5}}, status="running", minute=3, op="start"
        )
        index.sync()
        assert index.query("SELECT num FROM params WHERE run_id=? AND key='optim.lr'", (four,))
        add_run(store, four, config={"optim": {"lr": 0.25}}, minute=3)
        # A run is never deleted (docs/format.md, "Transitions"): the line is refused. Store
        # refuses to write it; it is appended past Store, as an attacker would.
        gone = "runs/20261130T060100.000000Z-00000002"
        now = "2026-11-30T07:00:00.000000Z"
        store.log.append(op="delete", ref=gone, old=store.refs.get(gone), new=None, time=now)
        store.refs.path_of(gone).unlink()
        index.sync()
        incremental = index.dump()
        assert [r[3] for r in incremental["params"] if r[0] == four] == [0.25]
        assert [r for r in incremental["params"] if r[0].endswith("2")]
        assert incremental["params"] and incremental["metrics"] and incremental["checkpoints"]
        index.rebuild()
        assert index.dump() == incremental
    assert running != store.refs.get(f"runs/{four}")
    assert check_index(store) == []


def test_verify_reports_edited_query_tables_and_views(store: Store) -> None:
    _ledger(store)
    with Index(store) as index:
        index.sync()
    assert check_index(store) == []
    edits = [
        "UPDATE params SET num = 0.5 WHERE key = 'optim.lr'",
        "DELETE FROM metrics WHERE name = 'val/acc'",
        "INSERT INTO tags VALUES ('20261130T060100.000000Z-00000002', 'paper', 'doe2026')",
        "UPDATE checkpoints SET bytes_new = 0",
        # A view that lies (a dropped one is simply created again on the next open).
        "DROP VIEW run_metrics; CREATE VIEW run_metrics AS SELECT run_id, 0.99 AS last FROM runs",
    ]
    for edit in edits:
        path = store.root / "index.sqlite"
        conn = sqlite3.connect(path)
        conn.executescript(edit)
        conn.commit()
        conn.close()
        problems = check_index(store)
        assert problems and all(p.kind == "index-mismatch" for p in problems), edit
        with Index(store) as index:
            index.rebuild()
        assert check_index(store) == [], edit


def test_an_index_from_the_previous_layout_is_folded_again(store: Store) -> None:
    _ledger(store)
    with Index(store) as index:
        index.sync()
        index.db.execute("DELETE FROM params")
        index.db.execute("UPDATE meta SET value='1' WHERE key='version'")
    with Index(store) as index:
        index.sync()
        assert len(index.query("SELECT * FROM params")) == 5 + 3 + 5
    assert check_index(store) == []


def test_importing_the_query_tables_first_still_opens_an_index(tmp_path: Path) -> None:
    # Whichever module a program imports first, the runs table exists before indexes on it.
    code = (
        "import sys; import ledger.index.tables; from ledger.index import Index; "
        "from ledger.store import Store; Index(Store.init(sys.argv[1])).close()"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / ".ledger")],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
