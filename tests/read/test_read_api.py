"""``ledger.open(path)``: runs, metric series and one run as real pandas DataFrames and Python
objects, read from a ledger of real recorded runs (``ledger record`` subprocesses), each value
from the hashed records as ``ledger ls`` and ``show`` read them."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from _read_project import ledger_ok
from _support import subprocess_env

import ledger
from ledger.errors import LedgerNotFoundError, UnknownIdError, UsageError


def test_runs_is_a_table_of_runs(built: tuple[Path, dict[str, str]]) -> None:
    repo, ids = built
    runs = ledger.open(repo).runs()
    assert isinstance(runs, pd.DataFrame)
    # Originals, newest first; the replay is counted under its original, not listed.
    assert list(runs["id"]) == [ids["failed"], ids["b"], ids["a"]]
    a = runs.set_index("id").loc[ids["a"]]
    assert a["name"] == "sweep" and a["status"] == "succeeded" and a["exit_code"] == 0
    assert a["params.lr"] == 0.1 and a["params.seed"] == 1
    assert a["metrics.loss.last"] == pytest.approx(0.11)  # 0.1 * 1 + 1 / 100
    assert a["metrics.loss.best"] == pytest.approx(0.11)  # lower is better for a loss
    assert a["metrics.acc.best"] == pytest.approx(0.801)
    assert a["tags"] == {"team": "x"} and a["replays"] == 1 and not a["retracted"]
    assert a["verdict"] == "reproduced"
    assert [v["outcome"] for v in a["verdicts"]] == ["reproduced"]
    assert str(runs["started"].dtype).startswith("datetime64") and runs["started"].dt.tz
    assert (runs["ended"] >= runs["started"]).all()
    failed = runs.set_index("id").loc[ids["failed"]]
    assert failed["status"] == "failed" and failed["exit_code"] == 3


def test_runs_filters_as_ls_does(built: tuple[Path, dict[str, str]]) -> None:
    repo, ids = built
    led = ledger.open(repo / ".ledger")  # the ledger folder itself works too
    assert list(led.runs(where="params.lr < 0.05")["id"]) == [ids["b"]]
    assert list(led.runs(where=["params.lr >= 0.05", "status = succeeded"])["id"]) == [ids["a"]]
    assert list(led.runs(name="broken")["id"]) == [ids["failed"]]
    assert list(led.runs(status="failed")["id"]) == [ids["failed"]]
    assert list(led.runs(tags={"team": "x"})["id"]) == [ids["a"]]
    assert list(led.runs(tags=["team=x"])["id"]) == [ids["a"]]
    assert list(led.runs(limit=1)["id"]) == [ids["failed"]]
    with_replays = led.runs(replays=True)
    assert list(with_replays["id"]) == [ids["failed"], ids["b"], ids["a"], ids["replay"]]
    assert with_replays.set_index("id").loc[ids["replay"], "replay_of"] == ids["a"]
    assert led.runs(where="params.lr > 5").empty
    with pytest.raises(UsageError, match="not FIELD OP VALUE"):
        led.runs(where="params.lr")
    # From a subfolder of the project, as the commands find it.
    (repo / "out").mkdir(exist_ok=True)
    assert len(ledger.open(repo / "out").runs()) == 3


def test_metrics_is_a_long_table(built: tuple[Path, dict[str, str]]) -> None:
    repo, ids = built
    led = ledger.open(repo)
    m = led.metrics([ids["a"], "broken"], names="loss")
    assert list(m.columns) == [
        "run",
        "metric",
        "step",
        "value",
        "time",
        "rank",
        "source",
        "samples",
    ]
    assert set(m["run"]) == {ids["a"], ids["failed"]} and set(m["metric"]) == {"loss"}
    a = m[m["run"] == ids["a"]].sort_values("step")
    assert list(a["step"]) == [0, 1, 2, 3]
    assert list(a["value"]) == pytest.approx([0.41, 0.31, 0.21, 0.11])
    assert a["rank"].isna().all() and set(a["source"]) == {"stdout"}
    assert (a["time"] >= 0).all()
    # Every metric of every listed run; a runs() table selects the runs.
    everything = led.metrics()
    assert set(everything["metric"]) == {"loss", "acc"} and len(everything) == 3 * 2 * 4
    chosen = led.metrics(led.runs(where="params.lr < 0.05"), ["acc"])
    assert set(chosen["run"]) == {ids["b"]} and len(chosen) == 4
    with pytest.raises(UsageError, match="no metric 'nope'"):
        led.metrics([ids["a"]], ["nope"])
    with pytest.raises(UnknownIdError):
        led.metrics(["no-such-run"])


def test_run_has_config_outputs_inputs_checkpoints_replays(
    built: tuple[Path, dict[str, str]],
) -> None:
    repo, ids = built
    led = ledger.open(repo)
    run = led.run(ids["a"][:-2])  # a unique prefix
    assert run.id == ids["a"] and run.name == "sweep" and run.status == "succeeded"
    assert run.config == {"lr": 0.1, "seed": 1} and run.params == {"lr": 0.1, "seed": 1}
    assert run.tags == {"team": "x"} and run.retracted is None
    assert [o["path"] for o in run.outputs] == ["out/model.txt"]
    assert run.output_bytes("out/model.txt") == b"weights 0.1 1\n"
    assert run.inputs == [] and run.checkpoints == []
    assert [r["run_id"] for r in run.replays] == [ids["replay"]]
    assert [v["outcome"] for v in run.replays[0]["verdicts"]] == ["reproduced"]
    assert run.contract is not None and run.contract["argv"][:2] == ["python", "train.py"]
    assert run.metric_names == ["acc", "loss"]
    assert list(run.metrics("acc")["value"]) == pytest.approx([0.501, 0.601, 0.701, 0.801])
    with pytest.raises(UsageError, match=r"recorded no output file 'out/none\.pt'"):
        run.output_bytes("out/none.pt")
    with pytest.raises(LedgerNotFoundError):
        ledger.open(repo.parent / "elsewhere")


def test_curation_shows_in_the_tables(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    ledger_ok("tag", ids["b"], "stage=final", cwd=repo)
    ledger_ok("rename", ids["b"], "small-lr", cwd=repo)
    ledger_ok("retract", ids["failed"], "--reason", "crashed on a bad node", cwd=repo)
    led = ledger.open(repo)
    runs = led.runs()
    assert list(runs["id"]) == [ids["b"], ids["a"]]  # the retracted run is left out
    b = runs.set_index("id").loc[ids["b"]]
    assert b["name"] == "small-lr" and b["tags"] == {"stage": "final"}
    everything = led.runs(retracted=True).set_index("id")
    assert everything.loc[ids["failed"], "retracted"]
    assert everything.loc[ids["failed"], "retraction_reason"] == "crashed on a bad node"
    assert list(led.runs(name="small-lr")["id"]) == [ids["b"]]
    assert led.run("small-lr").id == ids["b"]
    assert led.run(ids["failed"]).retracted["reason"] == "crashed on a bad node"  # type: ignore[index]


def test_an_edited_index_does_not_change_the_table(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    led = ledger.open(repo)
    before = led.runs()
    db = sqlite3.connect(repo / ".ledger" / "index.sqlite")
    db.execute(
        "UPDATE runs SET status = 'succeeded', name = 'forged' WHERE run_id = ?", (ids["failed"],)
    )
    db.execute("UPDATE metrics SET last = 99 WHERE run_id = ?", (ids["a"],))
    db.commit()
    db.close()
    after = led.runs()
    pd.testing.assert_frame_equal(before, after)
    assert any("disagrees" in w for w in led.warnings), led.warnings


def test_missing_pandas_names_the_extra(built: tuple[Path, dict[str, str]]) -> None:
    """In a process where pandas cannot be imported, the tables say what to install; what
    needs no pandas (``run``, the row lists) still works."""
    repo, ids = built
    code = textwrap.dedent(
        f"""
        import sys
        class NoPandas:
            def find_spec(self, name, path=None, target=None):
                if name == "pandas" or name.startswith("pandas."):
                    raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
                return None
        sys.meta_path.insert(0, NoPandas())
        import ledger
        from ledger.errors import UsageError
        led = ledger.open({str(repo)!r})
        assert led.run({ids["a"]!r}).params == {{"lr": 0.1, "seed": 1}}
        assert len(led.run_rows()) == 3 and len(led.metric_rows([{ids["a"]!r}], ["loss"])) == 4
        for call in (led.runs, led.metrics):
            try:
                call()
            except UsageError as e:
                print(e.message, "|", e.hint)
            else:
                raise SystemExit("no error without pandas")
        assert "pandas" not in sys.modules
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert "needs pandas, which is not installed" in line
        assert "pip install 'ledger-repro[table]'" in line
