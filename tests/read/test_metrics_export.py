"""``ledger metrics RUN... --format csv|jsonl|parquet``: metric series and run tables of real
recorded runs as files, read back with pandas and pyarrow."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _read_project import ledger_ok
from _support import run_ledger


def test_series_as_csv_on_stdout(built: tuple[Path, dict[str, str]]) -> None:
    repo, ids = built
    out = ledger_ok("metrics", ids["a"], "broken", "-m", "loss", cwd=repo)
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame.columns) == [
        "run",
        "metric",
        "step",
        "value",
        "time",
        "rank",
        "source",
        "samples",
    ]
    assert set(frame["run"]) == {ids["a"], ids["failed"]} and set(frame["metric"]) == {"loss"}
    a = frame[frame["run"] == ids["a"]].sort_values("step")
    assert list(a["value"]) == pytest.approx([0.41, 0.31, 0.21, 0.11])


def test_series_as_parquet_and_jsonl(built: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, ids = built
    target = tmp_path / "series.parquet"
    r = run_ledger("metrics", "--format", "parquet", "-o", str(target), cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "wrote 24 rows" in r.stderr  # 3 runs, 2 metrics, 4 steps
    table = pq.read_table(target)
    assert str(table.schema.field("step").type) == "int64"
    assert str(table.schema.field("value").type) == "double"
    assert str(table.schema.field("rank").type) == "int64"
    rows = table.to_pylist()
    b_acc = sorted(
        (r["step"], r["value"]) for r in rows if r["run"] == ids["b"] and r["metric"] == "acc"
    )
    assert b_acc == [(0, 0.502), (1, 0.602), (2, 0.702), (3, 0.802)]
    lines = ledger_ok("metrics", ids["b"], "-m", "acc", "-f", "jsonl", cwd=repo).splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [(p["step"], p["value"]) for p in parsed] == b_acc
    assert all(p["rank"] is None and p["source"] == "stdout" for p in parsed)


def test_run_table_export(built: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, ids = built
    target = tmp_path / "runs.parquet"
    ledger_ok("metrics", "--runs", "-f", "parquet", "-o", str(target), cwd=repo)
    table = pq.read_table(target)
    assert str(table.schema.field("started").type) == "timestamp[us, tz=UTC]"
    by_id = {r["id"]: r for r in table.to_pylist()}
    assert set(by_id) == {ids["a"], ids["b"], ids["failed"]}
    a = by_id[ids["a"]]
    assert a["params.lr"] == 0.1 and a["metrics.loss.last"] == pytest.approx(0.11)
    assert json.loads(a["tags"]) == {"team": "x"} and a["verdict"] == "reproduced"
    csv = pd.read_csv(
        io.StringIO(ledger_ok("metrics", "--runs", "-w", "params.lr < 0.05", cwd=repo))
    )
    assert list(csv["id"]) == [ids["b"]] and csv["params.seed"].tolist() == [2]
    # Named runs are taken as named: a replay too.
    named = ledger_ok("metrics", "--runs", "-f", "jsonl", ids["replay"], cwd=repo)
    (row,) = [json.loads(line) for line in named.splitlines()]
    assert row["id"] == ids["replay"] and row["replay_of"] == ids["a"]


def test_export_notes_its_file(built: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The file is ledger's output, not the project's code: the next run's snapshot leaves it
    out (made.jsonl)."""
    repo, _ = built
    target = repo / "series-export.csv"
    try:
        ledger_ok("metrics", "-o", str(target), cwd=repo)
        made = (repo / ".ledger" / "made.jsonl").read_text()
        assert str(target) in made
    finally:
        target.unlink(missing_ok=True)


def test_bad_input_is_refused_and_nothing_is_written(
    built: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, ids = built
    target = tmp_path / "keep.csv"
    target.write_text("mine\n")
    cases = [
        (["metrics", "-f", "parquet"], "Parquet is binary"),
        (["metrics", "no-such-run", "-o", str(target)], "no run 'no-such-run'"),
        (["metrics", ids["a"], "-m", "nope", "-o", str(target)], "no metric 'nope'"),
        (["metrics", "-f", "xml"], "'xml' is not one of"),
        (["metrics", "-w", "params.lr", "-o", str(target)], "not FIELD OP VALUE"),
        (["metrics", "--runs", "-m", "loss", "-o", str(target)], "--metric selects series"),
        (["metrics", "-o", str(tmp_path)], "is a folder"),
    ]
    for args, said in cases:
        r = run_ledger(*args, cwd=repo)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert said in r.stderr, (args, r.stderr)
        assert r.stdout == ""
    assert target.read_text() == "mine\n"
