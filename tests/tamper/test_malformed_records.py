"""A run record sealed through the log but whose fields do not fit the run model (damaged, or
written by hand with the store's own API: the import door refuses such records, a local script
does not). Every command keeps working: the index takes what fits (``ledger/index/tables.py``),
``ls`` prints the odd value as JSON, ``show`` and every loader refuse the record with a clear
error and exit 5 (``MalformedRecordError``, from ``record_from_json``), and ``ledger verify``
names the record and the field (``malformed-record``). Before, one such record made ``reindex``,
``ls``, ``show`` and ``verify`` each end in a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

from ledger.errors import IntegrityError, MalformedRecordError
from ledger.records.base import malformed_reason, record_from_json
from ledger.records.run import Run
from ledger.run.find import load_run
from ledger.run.ids import run_ref
from ledger.store import Store

# (field, value, the field the refusal names): each forged into a copy of a real run record.
ODD = [
    ("name", ["a", "b"], "name"),
    ("name", {"x": 1}, "name"),
    ("name", 5, "name"),
    ("tags", ["a"], "tags"),
    ("tags", "x", "tags"),
    ("tags", {"k": [1]}, "tags.k"),
    ("status", 5, "status"),
    ("status", "weird", "status"),
    ("exit_code", "x", "exit_code"),
    ("wall_seconds", "slow", "wall_seconds"),
    ("started", ["x"], "started"),
    ("contract_digest", ["x"], "contract_digest"),
    ("replay_of", 5, "replay_of"),
    ("metrics", 5, "metrics"),
    ("metrics", [{"name": 5}], "metrics.0"),
    ("metrics", [{"name": "loss", "source": "stdout", "rank": "zero"}], "metrics.0"),
    ("checkpoints", 7, "checkpoints"),
    ("outputs", [5], "outputs.0"),
    ("notes", [5], "notes.0"),
]


@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, tuple]]:
    """A ledger with one run as ``ledger record`` sealed it and one forged copy per ODD case;
    (project, the good run's id, forged run id -> its case)."""
    root = tmp_path_factory.mktemp("malformed")
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True
        )
    init_ledger(root)
    r = run_ledger("record", "-n", "good", "--", "python", "-c", "print('loss 1.0')", cwd=root)
    assert r.returncode == 0, r.stderr
    store = Store.open(root / ".ledger")
    ((_ref, oid),) = [
        (k, v) for k, v in store.ref_state_from_log().items() if k.startswith("runs/")
    ]
    good = store.get_json(oid)
    cases = {}
    for i, (field, value, where) in enumerate(ODD, start=1):
        rec = good | {field: value, "run_id": f"{good['run_id'][:-8]}{i:08x}"}
        status = rec["status"] if isinstance(rec["status"], str) else "succeeded"
        store.set_ref(run_ref(rec["run_id"]), store.put_json(rec), op="seal", status=status)
        cases[rec["run_id"]] = (field, value, where)
    return root, good["run_id"], cases


def _clean(r: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    return r.stdout


def test_reindex_ls_and_ls_json_list_every_run(forged: tuple[Path, str, dict]) -> None:
    root, good, cases = forged
    assert run_ledger("reindex", cwd=root).returncode == 0
    r = run_ledger("ls", cwd=root)
    text = _clean(r)
    assert r.returncode == 0 and '["a", "b"]' in text and '{"x": 1}' in text, text
    rows = json.loads(_clean(run_ledger("ls", "--json", cwd=root)))
    assert {row["run_id"] for row in rows} == {good, *cases}
    # The warning names the record at fault, not the index ("run `ledger reindex`" would not help).
    assert "record is malformed (status: " in r.stderr, r.stderr


def test_show_refuses_each_forged_run_naming_the_field_and_shows_the_good_one(
    forged: tuple[Path, str, dict],
) -> None:
    root, good, cases = forged
    r = run_ledger("show", good, cwd=root)
    assert r.returncode == 0 and "good" in _clean(r)
    store = Store.open(root / ".ledger")
    for run_id, (field, value, where) in cases.items():  # the loader every command uses
        with pytest.raises(MalformedRecordError) as e:
            load_run(store, run_id)
        assert f"run {run_id}'s record b3:" in e.value.message, e.value.message
        assert f"is malformed: {where}" in e.value.message, (field, value, e.value.message)
    for run_id in list(cases)[:: len(cases) - 1]:  # the first and the last through the CLI
        r = run_ledger("show", run_id, cwd=root)
        _clean(r)
        assert r.returncode == 5, r.stderr
        assert f"ledger: error: run {run_id}'s record b3:" in r.stderr, r.stderr
        assert f"is malformed: {cases[run_id][2]}" in r.stderr, r.stderr
        assert "ledger: hint: the record was damaged or written by hand; `ledger verify` lists" in (
            r.stderr
        )


def test_verify_names_every_forged_record_and_fails(forged: tuple[Path, str, dict]) -> None:
    root, _good, cases = forged
    r = run_ledger("verify", "--json", cwd=root)
    assert r.returncode == 1, r.stderr
    problems = json.loads(_clean(r))["problems"]
    malformed = [p for p in problems if p["kind"] == "malformed-record"]
    for run_id, (field, _value, where) in cases.items():
        hits = [p for p in malformed if f"runs/{run_id} holds run record" in p["message"]]
        assert len(hits) == 1, (field, malformed)
        assert f"which is malformed: {where}" in hits[0]["message"], hits[0]
    assert len(malformed) == len(cases), [p for p in malformed]


def test_the_refusal_is_an_integrity_error_and_still_a_value_error(
    forged: tuple[Path, str, dict],
) -> None:
    root, good, cases = forged
    store = Store.open(root / ".ledger")
    state = store.ref_state_from_log()
    record: Any = store.get_json(state[run_ref(good)])
    assert malformed_reason(record) is None and record_from_json(record, Run).name == "good"
    run_id = next(iter(cases))
    odd = store.get_json(state[run_ref(run_id)])
    with pytest.raises(MalformedRecordError) as e:
        record_from_json(odd, Run)
    assert isinstance(e.value, IntegrityError) and isinstance(e.value, ValueError)
    assert e.value.exit_code == 5 and e.value.where == "name"
    assert malformed_reason(odd) == f"name: {e.value.reason}"
    # A kind this ledger does not know, or a newer schema, is not "malformed".
    assert malformed_reason({"kind": "from-the-future"}) is None
    assert malformed_reason(odd | {"schema": 99}) is None


def test_forged_verdicts_leave_ls_show_export_and_verify_working(
    forged: tuple[Path, str, dict], tmp_path: Path
) -> None:
    """The same for verdict records, read raw by the index, ``show``'s verdict lookup, the
    export's closure and the web view's labels: a number where the list of replays goes."""
    root, good, _cases = forged
    project = tmp_path / "p"
    subprocess.run(["cp", "-a", str(root), str(project)], check=True)
    r = run_ledger("replay", good, cwd=project)
    assert r.returncode == 0, r.stderr
    store = Store.open(project / ".ledger")
    ((ref, oid),) = [(k, v) for k, v in store.ref_state_from_log().items() if k[:9] == "verdicts/"]
    verdict = store.get_json(oid)
    odd = {"replays": [5, "x", {"a": 1}, [5]], "original": [5, ["x"]]}
    n = 0
    for field, values in odd.items():
        for value in values:
            n += 1
            forged_ref = f"{ref[:-8]}{n:08x}"
            store.set_ref(
                forged_ref,
                store.put_json(verdict | {field: value}),
                op="verdict",
                outcome=verdict["outcome"],
            )
    assert run_ledger("reindex", cwd=project).returncode == 0
    for args in (["ls"], ["show", good], ["export", good, "-o", str(tmp_path / "p.tar")]):
        r = run_ledger(*args, cwd=project)
        _clean(r)
        assert r.returncode == 0, (args, r.stderr)
    r = run_ledger("verify", "--json", cwd=project)
    problems = json.loads(_clean(r))["problems"]  # the copied ledger's forged runs too
    malformed = [p for p in problems if "holds verdict record" in p["message"]]
    assert r.returncode == 1 and len(malformed) == n, malformed
    assert all(p["kind"] == "malformed-record" for p in malformed), malformed
