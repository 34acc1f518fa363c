"""``ledger reindex`` on a ledger of every kind of run: the index it writes holds the rows the
commands kept up line by line; it is folded aside and copied in, so the index is never half
written and writers do not wait for the fold."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger

from ledger.index import Index, rebuild_index
from ledger.index.consistency import check_index
from ledger.run.curate import rename_run, retract_run, tag_run
from ledger.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from _ui_lab import add_run

CKPT = "b3:" + "cd" * 32


def _run_id(i: int) -> str:
    return f"20261130T06{i:02d}00.000000Z-{i:08x}"


def _verdict(store: Store, original: str, replays: list[str], outcome: str, i: int) -> None:
    record = {
        "kind": "verdict",
        "schema": 1,
        "original": original,
        "replays": replays,
        "mode": "bitwise",
        "outcome": outcome,
        "summary": f"{outcome}: {len(replays)} replay(s)",
        "created": f"2026-11-30T07:{i:02d}:00.000000Z",
    }
    store.set_ref(f"verdicts/{original}/v{i}", store.put_json(record), op="verdict")


def _check(store: Store, ref: str, op: str, run_id: str | None) -> None:
    record = {"kind": op, "schema": 1, "run_id": run_id, "passed": run_id is not None}
    store.set_ref(ref, store.put_json(record), op=op, passed=run_id is not None)


def _varied(store: Store, index: Index) -> None:
    """Runs of every shape, the index kept up after each write as ``ledger`` commands keep it:
    a sweep sharing one config per point, runs started then sealed, failed and killed runs,
    tags, checkpoints (saved, saved again, step refs moved and deleted), replays and their
    verdicts, checks and gates, curation (tagged, renamed, retracted), notes overwritten and
    deleted, and a ref whose object was collected."""
    for i in range(12):  # a sweep: 3 learning rates x 4 seeds, each started, then sealed
        lr = (0.1, 0.01, 0.001)[i % 3]
        status = ("succeeded", "failed", "succeeded", "killed")[i % 4]
        kw: dict[str, Any] = {
            "name": f"sweep-lr{lr}",
            "tags": {"sweep": "lr", "seed": str(i // 3), **({"bad": "yes"} if i % 5 == 0 else {})},
            "config": {"optim": {"lr": lr, "name": "sgd"}, "seed": i // 3, "layers": [2, i]},
            "minute": i,
        }
        points = {"loss": [(s, 1.0 / (s + 1 + i)) for s in range(4)], "val/acc": [(3, 0.5)]}
        add_run(store, _run_id(i), {"loss": points["loss"][:1]}, status="running", op="start", **kw)
        index.sync()
        saves = [
            {"event": "save", "checkpoint_digest": CKPT, "step": s, "bytes_total": 100,
             "bytes_new": 10 * s, "rank": 0, "time": f"2026-11-30T06:{i:02d}:{s:02d}.000000Z"}
            for s in range(i % 3)
        ]  # fmt: skip
        add_run(store, _run_id(i), points, status=status, checkpoints=saves, **kw)
        index.sync()
    add_run(store, _run_id(20), {"loss": [(0, 2.0)]}, name=None, minute=20)  # no name, no tags
    for i, original in ((21, 0), (22, 0), (23, 2)):  # replays, then the verdicts on them
        add_run(
            store, _run_id(i), {"loss": [(0, 1.0)]}, name=f"sweep-lr{(0.1, 0.001)[original // 2]}",
            replay_of=_run_id(original), minute=i,
        )  # fmt: skip
        index.sync()
    _verdict(store, _run_id(0), [_run_id(21), _run_id(22)], "reproduced", 1)
    _verdict(store, _run_id(2), [_run_id(23)], "not-reproduced", 2)
    _check(store, "checks/c1", "check", _run_id(1))
    _check(store, "gates/g1", "gate", None)
    index.sync()
    tag_run(store, _run_id(3), {"paper": "doe2026", "seed": "9"})
    rename_run(store, _run_id(3), "renamed")
    tag_run(store, _run_id(4), {"keep": "no"})
    retract_run(store, _run_id(4), "wrong data")
    index.sync()
    for step in (1, 2, 3):  # a checkpoint's step refs, `latest` moved, one step deleted
        rec = store.put_json({"kind": "checkpoint", "schema": 1, "step": step})
        store.set_ref(f"checkpoints/{_run_id(0)}/step-{step}", rec, op="checkpoint")
        store.set_ref(f"checkpoints/{_run_id(0)}/latest", rec, op="publish")
    store.delete_ref(f"checkpoints/{_run_id(0)}/step-1")
    for i in range(7):
        store.set_ref(f"notes/n{i % 3}", store.put_json({"kind": "note", "schema": 1, "i": i}))
        index.sync()
    store.delete_ref("notes/n2")
    gone = store.put_json({"kind": "note", "schema": 1, "gone": True})
    store.set_ref("notes/gone", gone)
    store.objects.path_of(gone).unlink()  # collected: no records row, no rows of its own
    index.sync()


@pytest.fixture
def varied(tmp_path: Path) -> tuple[Store, dict[str, list[tuple[Any, ...]]]]:
    """A ledger of varied runs and what the index kept up line by line holds."""
    store = Store.init(tmp_path / ".ledger")
    with Index(store) as index:
        _varied(store, index)
        return store, index.dump()


def test_reindex_gives_the_rows_the_commands_kept_up(
    varied: tuple[Store, dict[str, list[tuple[Any, ...]]]],
) -> None:
    store, incremental = varied
    # Every table has rows: the ledger exercises each indexer.
    assert all(incremental[t] for t in incremental), [t for t in incremental if not incremental[t]]
    assert {r[4] for r in incremental["runs"]} >= {"succeeded", "failed", "killed"}
    r = run_ledger("reindex", "--ledger", str(store.root))
    assert r.returncode == 0, r.stderr
    with Index(store) as index:
        assert index.dump() == incremental
        schema = index.query("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    with Index(store, conn=fresh) as line_by_line:
        line_by_line.sync()  # an empty index folds every line, one at a time
        assert line_by_line.dump() == incremental
        # The same views, triggers, indexes and tables as an index the commands built.
        assert (
            line_by_line.query("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            == schema
        )
    assert check_index(store) == []
    r = run_ledger("ls", "--json", "--search", "paper=doe2026", "--ledger", str(store.root))
    assert r.returncode == 0 and '"renamed"' in r.stdout, r.stderr


def test_a_rebuild_that_fails_leaves_the_index_as_it_was(
    varied: tuple[Store, dict[str, list[tuple[Any, ...]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, before = varied
    from ledger.index import tables

    calls = 0

    def dies_halfway(store_: Any, rec: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 6:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the fold
        return real(store_, rec)

    real = tables.params_of
    monkeypatch.setattr(tables, "params_of", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        rebuild_index(store)
    assert calls == 6
    monkeypatch.undo()
    conn = sqlite3.connect(store.root / "index.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Index(store) as index:
        assert index.dump() == before
    # Nothing left beside the index: the fold's database was SQLite's own temporary file.
    assert sorted(p.name for p in store.root.glob("index.sqlite*")) == ["index.sqlite"]


def test_writers_do_not_wait_for_the_fold(
    varied: tuple[Store, dict[str, list[tuple[Any, ...]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the records are read and the rows built, the index takes writes (a command
    catching up with a new run): only the copy at the end takes its write lock."""
    store, _ = varied
    from ledger.index import tables

    real = tables.params_of
    wrote: list[int] = []

    def write_meanwhile(store_: Any, rec: Any) -> Any:
        if not wrote:
            wrote.append(-1)  # once: the other command's own fold calls this too
            add_run(store, _run_id(40), {"loss": [(0, 1.0)]}, name="meanwhile", minute=40)
            # The write lock is free (timeout 0: fail at once, not wait, if it is held).
            probe = sqlite3.connect(store.root / "index.sqlite", timeout=0, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            except sqlite3.OperationalError as e:  # "database is locked"
                wrote.append(str(e))
                return real(store_, rec)
            finally:
                probe.close()
            with Index(store) as other:
                wrote.append(other.sync())
        return real(store_, rec)

    monkeypatch.setattr(tables, "params_of", write_meanwhile)
    rebuild_index(store)
    monkeypatch.undo()
    assert wrote == [-1, 1]
    with Index(store) as index:
        # The rebuild folded the log as it was when it was read; the next command catches up.
        assert not index.query("SELECT 1 FROM runs WHERE name = 'meanwhile'")
        assert index.sync() == 1
        assert index.query("SELECT 1 FROM runs WHERE name = 'meanwhile'")
    assert check_index(store) == []
