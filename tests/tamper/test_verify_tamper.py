"""Every field of every file kind, changed behind ledger's back, is reported by ``ledger verify``.

One table per file kind: log lines (each field, on the last line and on an earlier one), ref
files, index rows, objects. Each case names the problem kinds it must produce. The log cases
also say whether the edit is still caught once the forger rebuilds the index from the edited
log (``after_reindex``): where it is not, the only anchor left is a chain head written down
outside the ledger, and ``verify --head`` must fail.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger

from ledger._canonical import canonical_json, format_datetime
from ledger._hashing import hash_bytes
from ledger.index import Index
from ledger.index.consistency import check_consistency
from ledger.store import Store
from ledger.store.verify import Problem, verify_store

Line = dict[str, Any]


def problems(store: Store, head: str | None = None) -> list[Problem]:
    report = verify_store(store, head=head)
    return report.problems + check_consistency(store)


def _now() -> str:
    return format_datetime(datetime.now(UTC))


def lines(store: Store) -> list[Line]:
    return [json.loads(raw) for raw in store.log.path.read_bytes().splitlines()]


def write_lines(store: Store, entries: list[Line], *, rechain: bool = False) -> None:
    """Write the log back; ``rechain`` recomputes every ``prev`` as a careful forger would."""
    out: list[bytes] = []
    prev: str | None = None
    for i, entry in enumerate(entries):
        if rechain:
            entry = {**entry, "seq": i, "prev": prev}
        raw = canonical_json(entry)
        prev = hash_bytes(raw)
        out.append(raw + b"\n")
    store.log.path.write_bytes(b"".join(out))


def head_of(store: Store) -> str:
    report = verify_store(store)
    assert report.ok and report.head is not None, report.problems
    return report.head


def other(store: Store, entries: list[Line], i: int, key: str) -> str:
    """Another object id of the ledger than line ``i``'s ``key``."""
    return next(e["new"] for e in entries if e["new"] not in (None, entries[i][key]))


@dataclass(frozen=True)
class LineEdit:
    field: str
    edit: Callable[[Store, list[Line], int], None]  # changes entries[i] in place
    kinds: set[str]  # problem kinds at least one of which must be reported
    after_reindex: bool  # still caught once the index is rebuilt from the edited log


def _set(field: str, value: Any) -> Callable[[Store, list[Line], int], None]:
    def edit(store: Store, entries: list[Line], i: int) -> None:
        entries[i][field] = value

    return edit


def _drop(field: str) -> Callable[[Store, list[Line], int], None]:
    def edit(store: Store, entries: list[Line], i: int) -> None:
        del entries[i][field]

    return edit


def _new_and_ref(store: Store, entries: list[Line], i: int) -> None:
    """Point the line and its ref at another run's sealed record (`show` would display it)."""
    target = next(e["new"] for e in entries if e.get("op") == "seal" and e is not entries[i])
    entries[i]["new"] = target
    store.refs.path_of(entries[i]["ref"]).write_text(target + "\n")


def _other_new(store: Store, entries: list[Line], i: int) -> None:
    entries[i]["new"] = other(store, entries, i, "new")


def _other_old(store: Store, entries: list[Line], i: int) -> None:
    entries[i]["old"] = other(store, entries, i, "old")


def _other_ref(store: Store, entries: list[Line], i: int) -> None:
    entries[i]["ref"] = next(e["ref"] for e in entries if e["ref"] != entries[i]["ref"])


# The last line of the fixture's log is the verdict of the replay; the cases below run on the
# last *seal* line (made the last line first) and on the verdict line.
SEAL_EDITS = [
    LineEdit("status", _set("status", "killed"), {"log-record"}, True),
    LineEdit("status-dropped", _drop("status"), {"log-record"}, True),
    LineEdit("op", _set("op", "set"), {"transition"}, True),
    LineEdit("op-start", _set("op", "start"), {"transition"}, True),
    LineEdit("ref", _other_ref, {"ref-mismatch", "transition"}, True),
    LineEdit("old", _other_old, {"transition"}, True),
    LineEdit("old-null", _set("old", None), {"transition"}, True),
    LineEdit("new", _other_new, {"ref-mismatch"}, True),
    LineEdit("new-and-ref", _new_and_ref, {"log-record"}, True),
    LineEdit("time-earlier", _set("time", "2001-01-01T00:00:00.000000Z"), {"log-record"}, True),
    LineEdit("time-later", _set("time", "2099-01-01T00:00:00.000000Z"), {"index-mismatch"}, False),
    LineEdit("time-garbage", _set("time", "yesterday"), {"log-record"}, True),
    LineEdit("extra-field", _set("verified_by", "reviewer"), {"log-record"}, True),
    LineEdit("seq", _set("seq", 99), {"log-chain"}, True),
    LineEdit("prev", _set("prev", "b3:" + "0" * 64), {"log-chain"}, True),
]
VERDICT_EDITS = [
    LineEdit("outcome", _set("outcome", "diverged"), {"log-record"}, True),
    LineEdit("op", _set("op", "set"), {"transition"}, True),
    LineEdit("ref", _set("ref", "verdicts/x/y"), {"ref-mismatch", "log-record"}, True),
    LineEdit("time-later", _set("time", "2099-01-01T00:00:00.000000Z"), {"index-mismatch"}, False),
]


def _make_seal_last(store: Store) -> None:
    """Cut the log after the bad run's seal line (and fix refs and index to match)."""
    entries = lines(store)
    cut = max(
        i for i, e in enumerate(entries) if e.get("op") == "seal" and e.get("status") == "failed"
    )
    for e in reversed(entries[cut + 1 :]):
        path = store.refs.path_of(e["ref"])
        if e["old"] is None:
            path.unlink()
        else:
            path.write_text(e["old"] + "\n")
    write_lines(store, entries[: cut + 1])
    with Index(store) as index:
        index.rebuild()


def _apply(store: Store, case: LineEdit, which: str) -> int:
    entries = lines(store)
    i = {"last": len(entries) - 1, "earlier": 1}[which]
    case.edit(store, entries, i)
    write_lines(store, entries)
    return i


@pytest.mark.parametrize("which", ["last", "earlier"])
@pytest.mark.parametrize("case", SEAL_EDITS, ids=lambda c: c.field)
def test_seal_line_field_edit_is_reported(project: Path, case: LineEdit, which: str) -> None:
    store = Store.open(project / ".ledger")
    _make_seal_last(store)
    head = head_of(store)
    assert not problems(store)
    if which == "earlier":
        # Line 2 of the fixture is the good run's seal; edits there also break the chain.
        assert lines(store)[1]["op"] == "seal"
    _apply(store, case, which)
    found = problems(store)
    assert {p.kind for p in found} & (
        case.kinds | ({"log-chain"} if which == "earlier" else set())
    ), found
    with Index(store) as index:
        index.rebuild()
    after = problems(store)
    if which == "earlier" or case.after_reindex:
        assert after, "a rebuilt index must not hide this edit"
    else:
        assert not after  # the limit of a self-contained check: only an anchor catches it
    assert any(p.kind == "head" for p in problems(store, head=head)), "--head must fail"


@pytest.mark.parametrize("case", VERDICT_EDITS, ids=lambda c: c.field)
def test_verdict_line_field_edit_is_reported(project: Path, case: LineEdit) -> None:
    store = Store.open(project / ".ledger")
    head = head_of(store)
    assert lines(store)[-1]["op"] == "verdict"
    _apply(store, case, "last")
    assert {p.kind for p in problems(store)} & case.kinds
    with Index(store) as index:
        index.rebuild()
    assert bool(problems(store)) == case.after_reindex
    assert any(p.kind == "head" for p in problems(store, head=head))


def test_rollback_drop_seal_line_and_reset_ref(project: Path) -> None:
    """The reported silent rollback: the failed run goes back to `running`."""
    store = Store.open(project / ".ledger")
    _make_seal_last(store)
    head = head_of(store)
    entries = lines(store)
    seal = entries.pop()
    store.refs.path_of(seal["ref"]).write_text(seal["old"] + "\n")
    write_lines(store, entries)
    kinds = {p.kind for p in problems(store)}
    assert "index-mismatch" in kinds  # the index still remembers the seal
    with Index(store) as index:
        index.rebuild()
    assert not problems(store)  # consistent again: nothing inside the ledger contradicts it
    anchored = [p for p in problems(store, head=head) if p.kind == "head"]
    assert anchored and "rolled back or rewritten" in anchored[0].message


def test_wholesale_rewrite_fails_only_against_a_head(project: Path) -> None:
    store = Store.open(project / ".ledger")
    head = head_of(store)
    entries = lines(store)
    for e in entries:
        e["time"] = str(int(e["time"][:4]) + 1) + e["time"][4:]  # a year later, say
    write_lines(store, entries, rechain=True)
    with Index(store) as index:
        index.rebuild()
    assert not problems(store)
    assert verify_store(store).head != head
    assert [p.kind for p in problems(store, head=head)] == ["head"]


def test_a_head_from_before_new_runs_still_verifies(project: Path) -> None:
    store = Store.open(project / ".ledger")
    head = head_of(store)
    r = run_ledger("record", "--", "python", "train.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert head_of(store) != head
    assert not problems(store, head=head)


# -- ref files ------------------------------------------------------------------------------


def _ref_cases(store: Store) -> dict[str, Callable[[], None]]:
    runs = sorted(n for n, _ in store.refs.iter("runs/"))
    a, b = store.refs.path_of(runs[0]), store.refs.path_of(runs[1])
    return {
        "point-at-another-record": lambda: a.write_text(b.read_text()),
        "deleted": a.unlink,
        "added": lambda: store.refs.path_of("runs/forged").write_text(b.read_text()),
        "garbage": lambda: a.write_text("not an id\n"),
        "missing-object": lambda: a.write_text("b3:" + "1" * 64 + "\n"),
    }


@pytest.mark.parametrize(
    "case", ["point-at-another-record", "deleted", "added", "garbage", "missing-object"]
)
def test_ref_file_edit_is_reported(project: Path, case: str) -> None:
    store = Store.open(project / ".ledger")
    _ref_cases(store)[case]()
    kinds = {p.kind for p in problems(store)}
    assert kinds & {"ref-mismatch", "bad-ref", "missing-object"}, kinds


# -- index rows -----------------------------------------------------------------------------

INDEX_EDITS = {
    **{
        f"runs.{col}": f"UPDATE runs SET {col} = {val}"
        for col, val in {
            "run_id": "'x'",
            "oid": "'b3:" + "2" * 64 + "'",
            "name": "'forged'",
            "status": "CASE status WHEN 'failed' THEN 'succeeded' ELSE 'failed' END",
            "exit_code": "exit_code + 1",
            "started": "'2000-01-01T00:00:00Z'",
            "ended": "'2000-01-01T00:00:00Z'",
            "wall_seconds": "1e9",
            "contract_digest": "'b3:x'",
            "tags": '\'{"k": "v"}\'',
            "replay_of": "'x'",
            "host": "'elsewhere'",
            "pid": "1",
        }.items()
    },
    "runs.row-deleted": "DELETE FROM runs WHERE status = 'failed'",
    "runs.row-added": "INSERT INTO runs (ref, run_id, status) VALUES ('runs/f', 'f', 'succeeded')",
    "verdicts.outcome": "UPDATE verdicts SET outcome = 'diverged'",
    "verdicts.original": "UPDATE verdicts SET original = 'x'",
    "verdicts.row-deleted": "DELETE FROM verdicts",
    "refs.oid": "UPDATE refs SET oid = 'b3:" + "3" * 64 + "'",
    "refs.row-deleted": "DELETE FROM refs WHERE name LIKE 'runs/%'",
    "records.kind": "UPDATE records SET kind = 'note'",
    "log.hash": "UPDATE log SET hash = 'b3:" + "4" * 64 + "' WHERE seq = 0",
    "log.time": "UPDATE log SET time = '2000-01-01' WHERE seq = 1",
    "log.row-deleted": "DELETE FROM log WHERE seq = 2",
    "meta.last_seq": "UPDATE meta SET value = '999'",
    "table-dropped": "DROP TABLE verdicts",
}


@pytest.mark.parametrize("case", sorted(INDEX_EDITS))
def test_index_row_edit_is_reported(project: Path, case: str) -> None:
    store = Store.open(project / ".ledger")
    db = sqlite3.connect(store.root / "index.sqlite")
    db.execute(INDEX_EDITS[case])
    db.commit()
    db.close()
    found = problems(store)
    assert [p.kind for p in found] and {p.kind for p in found} == {"index-mismatch"}, found
    assert not verify_store(store).problems  # the store itself is intact: a cache went wrong
    r = run_ledger("verify", cwd=project)
    assert r.returncode == 1 and "index-mismatch" in r.stdout
    assert run_ledger("reindex", cwd=project).returncode == 0
    assert not problems(store)


def test_unreadable_index_is_reported(project: Path) -> None:
    store = Store.open(project / ".ledger")
    for suffix in ("", "-wal", "-shm"):
        p = store.root / f"index.sqlite{suffix}"
        if p.exists():
            p.unlink()
    (store.root / "index.sqlite").write_bytes(b"not a database" * 100)
    assert [p.kind for p in problems(store)] == ["index-mismatch"]


def test_a_missing_index_is_not_a_problem(project: Path) -> None:
    store = Store.open(project / ".ledger")
    for suffix in ("", "-wal", "-shm"):
        p = store.root / f"index.sqlite{suffix}"
        if p.exists():
            p.unlink()
    assert not problems(store)
    assert not (store.root / "index.sqlite").exists()  # verify writes nothing


# -- objects --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["edited", "deleted", "truncated"])
def test_object_edit_is_reported(project: Path, case: str) -> None:
    store = Store.open(project / ".ledger")
    oid = store.refs.get(sorted(n for n, _ in store.refs.iter("runs/"))[0])
    assert oid is not None
    path = store.objects.path_of(oid)
    path.chmod(0o644)
    if case == "edited":
        data = path.read_bytes()
        path.write_bytes(data[:-2] + bytes([data[-2] ^ 1]) + data[-1:])
    elif case == "deleted":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:10])
    kinds = {p.kind for p in problems(store)}
    assert kinds & {"corrupt-object", "missing-object"}, kinds


# -- other ref kinds: bindings of ref names to records ---------------------------------------


def test_checkpoint_and_audit_refs_are_bound_to_their_records(store: Store) -> None:
    ckpt = store.put_json(
        {"kind": "checkpoint", "run_id": "r1", "step": 3, "created": "2026-01-01T00:00:00Z"}
    )
    store.set_ref("checkpoints/r1/step-3", ckpt, op="checkpoint", step=3)
    store.set_ref("checkpoints/r1/latest", ckpt, op="publish", step=3)
    audit = store.put_json(
        {"kind": "audit", "audit_id": "a1", "exit_code": 0, "created": "2026-01-01T00:00:00Z"}
    )
    store.set_ref("audits/a1", audit, op="audit", exit_code=0)
    # The records are stubs with only the fields bound to ref names: their own check
    # (malformed-record, tests/tamper/test_malformed_records.py) is not this test's subject.
    assert not [p for p in check_consistency(store) if p.kind != "malformed-record"]
    store.set_ref("checkpoints/r1/step-4", ckpt, op="checkpoint", step=3)  # wrong step in name
    store.set_ref("checkpoints/r2/latest", ckpt, op="publish", step=3)  # another run's
    store.set_ref("audits/a2", audit, op="audit", exit_code=1)  # wrong id and exit code
    msgs = [p.message for p in check_consistency(store)]
    assert any("step '4'" in m for m in msgs), msgs
    assert any("run_id 'r2'" in m for m in msgs), msgs
    assert any("audit_id 'a2'" in m for m in msgs), msgs
    assert any("exit_code=1" in m for m in msgs), msgs


# -- the CLI ----------------------------------------------------------------------------------


def test_cli_prints_the_head_and_checks_it(project: Path) -> None:
    r = run_ledger("verify", cwd=project)
    assert r.returncode == 0, r.stdout
    head = r.stdout.split("chain head ")[1].split()[0]
    data = json.loads(run_ledger("verify", "--json", cwd=project).stdout)
    assert data["head"] == head and data["ok"]
    ok = run_ledger("verify", "--head", head.removeprefix("b3:"), cwd=project)
    assert ok.returncode == 0 and "extends head" in ok.stdout
    gone = run_ledger("verify", "--head", "b3:" + "5" * 64, cwd=project)
    assert gone.returncode == 1 and "not in the log" in gone.stdout
    bad = run_ledger("verify", "--head", head[:12], cwd=project)
    assert bad.returncode == 2 and "ledger: error:" in bad.stderr and "ledger: hint:" in bad.stderr


def test_chain_head_example_in_format_md(store: Store) -> None:
    from ledger.store.anchor import chain_head, extends

    text = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text()
    section = text.split("### Chain head")[1].split("## Verification")[0]
    blocks = section.split("```\n")[1::2]
    heads = [w.strip("`.,") for w in section.split() if w.startswith("`b3:")]
    assert len(blocks) == 2
    store.log.path.write_bytes(blocks[0].encode())
    assert chain_head(store.log) == (heads[0], 1)
    store.log.path.write_bytes((blocks[0] + blocks[1]).encode())
    assert chain_head(store.log) == (heads[-1], 2)
    assert extends(store.log, heads[0]).ok and extends(store.log, heads[-1]).ok
    assert not store.log.check()[0]


def test_appending_a_delete_of_a_run_is_reported(project: Path) -> None:
    """A chained, well-formed line that hides the failed run is still a tampering."""
    store = Store.open(project / ".ledger")
    bad = next(e for e in lines(store) if e.get("status") == "failed")
    # Store.delete_ref refuses the move; an attacker appends the line past it.
    store.log.append(op="delete", ref=bad["ref"], old=bad["new"], new=None, time=_now())
    store.refs.path_of(bad["ref"]).unlink()
    with Index(store) as index:
        index.sync()
    found = problems(store)
    # Refused, so the fold still holds the run: the removed ref file is a mismatch too.
    assert [p.kind for p in found] == ["transition", "ref-mismatch"]
    assert "op 'delete' is not allowed on a sealed run ref" in found[0].message
