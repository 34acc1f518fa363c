"""`ls` and `show` display only what hashed records say, whatever the index holds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _support import run_ledger


def _edit_index(project: Path, *sql: str) -> None:
    db = sqlite3.connect(project / ".ledger" / "index.sqlite")
    for s in sql:
        db.execute(s)
    db.commit()
    db.close()


def _ls(project: Path, *args: str) -> tuple[dict[str, dict[str, object]], str]:
    r = run_ledger("ls", "--replays", "--json", *args, cwd=project)
    assert r.returncode == 0, r.stderr
    return {row["run_id"]: row for row in json.loads(r.stdout)}, r.stderr


def test_clean_index_gives_no_warning(project: Path) -> None:
    rows, err = _ls(project)
    assert len(rows) == 3 and err == ""


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET status = 'failed', exit_code = 1 WHERE status = 'succeeded'",
        "UPDATE runs SET oid = (SELECT oid FROM runs WHERE name = 'b')",
        "UPDATE runs SET name = 'b'",
        "DELETE FROM runs WHERE name = 'b'",
        "INSERT INTO runs (ref, run_id, status) VALUES ('runs/zzz', 'zzz', 'succeeded')",
    ],
)
def test_ls_shows_the_records_not_a_tampered_index(
    project: Path, sealed: tuple[Path, dict[str, str]], sql: str
) -> None:
    clean, _ = _ls(project)
    _edit_index(project, sql)
    rows, err = _ls(project)
    assert rows == clean
    assert "ledger: warning: the index" in err and "ledger verify" in err
    # Filters apply to the record's values too.
    ids = sealed[1]
    assert set(_ls(project, "--status", "failed")[0]) == {ids["bad"]}
    assert set(_ls(project, "--name", "b")[0]) == {ids["bad"]}
    human = run_ledger("ls", "--replays", cwd=project)
    assert human.stdout.count("succeeded") == 2 and "zzz" not in human.stdout


def test_show_reads_replays_and_verdicts_from_records(
    project: Path, sealed: tuple[Path, dict[str, str]]
) -> None:
    ids = sealed[1]
    before = json.loads(run_ledger("show", "--json", ids["good"], cwd=project).stdout)
    _edit_index(
        project,
        "UPDATE verdicts SET outcome = 'diverged', summary = 'forged'",
        f"UPDATE runs SET status = 'failed' WHERE run_id = '{ids['replay']}'",
    )
    r = run_ledger("show", "--json", ids["good"], cwd=project)
    after = json.loads(r.stdout)
    assert after["verdicts"] == before["verdicts"] and after["replays"] == before["replays"]
    assert [v["outcome"] for v in after["verdicts"]] == ["reproduced"]
    assert after["warnings"] and "ledger: warning:" in r.stderr
    human = run_ledger("show", ids["good"], cwd=project).stdout
    assert "diverged" not in human and "forged" not in human and "reproduced" in human


def test_audit_reads_verdicts_from_records(
    project: Path, sealed: tuple[Path, dict[str, str]]
) -> None:
    from ledger.audit.replays import recorded_replays
    from ledger.store import Store

    good = sealed[1]["good"]
    store = Store.open(project / ".ledger")
    assert recorded_replays(store)[good].outcome == "reproduced"
    _edit_index(project, "UPDATE verdicts SET outcome = 'not-reproduced'")
    assert recorded_replays(store)[good].outcome == "reproduced"


def test_log_refuses_a_corrupt_output_capture(
    project: Path, sealed: tuple[Path, dict[str, str]]
) -> None:
    from ledger.run.find import load_run
    from ledger.store import Store

    good = sealed[1]["good"]
    assert "step 2 loss" in run_ledger("log", good, cwd=project).stdout
    store = Store.open(project / ".ledger")
    stdout = load_run(store, good)[1].stdout
    assert stdout is not None
    path = store.objects.path_of(stdout)
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b"loss", b"LOSS"))
    r = run_ledger("log", good, cwd=project)
    assert r.returncode == 5 and "LOSS" not in r.stdout and "ledger: error:" in r.stderr
