"""``ledger ls --where/--columns``: filters the index answers, checked against the records."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _support import run_ledger
from _ui_lab import add_run

from ledger.store import Store

A, B, C, R = (f"20261130T0600{i:02d}.000000Z-0000000{i}" for i in range(1, 5))


@pytest.fixture
def ledger(store: Store) -> Path:
    add_run(
        store,
        A,
        {"loss": [(0, 2.0), (1, 0.4)], "val/acc": [(1, 0.8)]},
        name="big-lr",
        tags={"dataset": "cifar10"},
        config={"lr": 0.1, "opt": {"name": "sgd"}},
    )
    add_run(
        store,
        B,
        {"loss": [(0, 2.0), (1, 0.9)]},
        name="small-lr",
        tags={"dataset": "mnist"},
        config={"lr": 0.001, "opt": {"name": "adam"}},
        minute=1,
    )
    add_run(store, C, {"loss": [(0, 3.0)]}, name="no-config", status="failed", minute=2)
    add_run(
        store,
        R,
        {"loss": [(0, 2.0), (1, 0.4)]},
        name="big-lr",
        config={"lr": 0.1, "opt": {"name": "sgd"}},
        replay_of=A,
        minute=3,
    )
    return store.root


def _ls(root: Path, *args: str) -> tuple[list[dict[str, object]], str]:
    r = run_ledger("ls", "--ledger", str(root), "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


@pytest.mark.parametrize(
    ("where", "want"),
    [
        (["params.lr > 0.01"], [A]),  # the replay matches too but ls lists originals
        (["params.lr <= 0.01"], [B]),
        (["params.opt.name = adam"], [B]),
        (["params.opt.name != adam"], [A]),  # a run without the key does not match
        (["metrics.loss.last < 0.5"], [A]),
        (["metrics.loss.first >= 2"], [C, B, A]),
        (["metrics.val/acc.best > 0.5"], [A]),
        (["tags.dataset = 'mnist'"], [B]),
        (["status = failed"], [C]),
        (["wall_seconds > 10", "params.lr > 0.01"], [A]),
        (["params.lr > 1"], []),
    ],
)
def test_where(ledger: Path, where: list[str], want: list[str]) -> None:
    args = [a for w in where for a in ("--where", w)]
    rows, err = _ls(ledger, *args)
    assert [r["run_id"] for r in rows] == want and err == ""


def test_columns_come_from_the_records(ledger: Path) -> None:
    rows, _ = _ls(ledger, "--columns", "name,params.lr,metrics.loss.last,tags.dataset")
    by_id = {r["run_id"]: r["columns"] for r in rows}
    assert by_id[A] == {
        "name": "big-lr",
        "params.lr": 0.1,
        "metrics.loss.last": 0.4,
        "tags.dataset": "cifar10",
    }
    assert by_id[C]["params.lr"] is None
    r = run_ledger("ls", "--ledger", str(ledger), "--columns", "name,params.lr")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "params.lr" in lines[0] and any("small-lr" in ln and "0.001" in ln for ln in lines)


def test_an_edited_params_table_cannot_make_a_run_match(ledger: Path) -> None:
    _ls(ledger)  # the index is up to date
    # (verify also reports these synthetic runs as unreplayable: their contracts are stubs)
    clean = run_ledger("verify", "--ledger", str(ledger))
    assert "index" not in clean.stdout + clean.stderr, clean.stdout
    db = sqlite3.connect(ledger / "index.sqlite")
    db.execute("UPDATE params SET num = 5 WHERE key = 'lr'")
    db.commit()
    db.close()
    rows, _ = _ls(ledger, "--where", "params.lr > 1")
    assert rows == []  # the records say 0.1 and 0.001
    r = run_ledger("verify", "--ledger", str(ledger))
    assert r.returncode != 0 and "params" in r.stdout and "index" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "params.lr"], "is not FIELD OP VALUE"),
        (["--where", "colour = red"], "is not a field"),
        (["--where", "metrics.loss.median > 1"], "a metric field ends in one of"),
        (["--columns", " , "], "--columns is empty"),
    ],
)
def test_bad_queries_are_usage_errors(ledger: Path, args: list[str], message: str) -> None:
    r = run_ledger("ls", "--ledger", str(ledger), *args)
    assert r.returncode == 2, r.stderr
    assert "ledger: error:" in r.stderr and message in r.stderr and "ledger: hint:" in r.stderr
    assert "Traceback" not in r.stderr
