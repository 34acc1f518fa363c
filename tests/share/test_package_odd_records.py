"""A package whose run record has fields of the wrong type (a name that is a list, a status
that is a number) is refused at the door: let in, it broke every command that lists the runs
(`ledger ls` and `reindex` stopped on sqlite3's "type 'list' is not supported"). And an index
meeting such a record anyway (a ledger written by hand) binds it as text, never stops."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from _support import run_ledger
from test_package_import import (
    manifest_of,
    read_members,
    snapshot,
    with_manifest,
    write_members,
)

from ledger._canonical import canonical_json
from ledger._hashing import hash_bytes
from ledger.index._indexers import bindable


def _forge(pkg: Path, run_id: str, out: Path, field: str, value: object) -> tuple[str, str]:
    """A copy of ``pkg`` at ``out`` whose run record has ``field`` set to ``value`` (its ref and
    manifest made to match, as a hostile author would); returns (ref, the record's new id)."""
    members = read_members(pkg)
    manifest = manifest_of(members)
    ref = f"runs/{run_id}"
    old = manifest["refs"][ref]  # type: ignore[index]
    record = next(json.loads(d) for i, d in members if i.name == f"objects/b3/{old[3:]}")
    record[field] = value
    body = canonical_json(record)
    oid = hash_bytes(body)
    info = copy.copy(next(m for m, _ in members if m.name.startswith("objects/")))
    info.name = f"objects/b3/{oid[3:]}"
    forged = copy.deepcopy(manifest)
    forged["refs"][ref] = oid  # type: ignore[index]
    forged["objects"][oid] = len(body)  # type: ignore[index]
    forged["total_size"] = int(forged["total_size"]) + len(body)  # type: ignore[call-overload]
    write_members(out, [*with_manifest(members, forged), (info, body)])
    return ref, oid


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", ["a", {"b": 1}]), ("status", 7), ("exit_code", [0]), ("tags", [1, 2])],
)
def test_a_run_record_of_the_wrong_shape_is_refused_and_nothing_changes(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, field: str, value: object
) -> None:
    _, run_id, pkg = packaged
    bad = tmp_path / "bad.ledgerpkg"
    ref, oid = _forge(pkg, run_id, bad, field, value)
    before = snapshot(fresh / ".ledger")
    r = run_ledger("import", str(bad), cwd=fresh)
    assert r.returncode == 5, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{ref}'s record {oid} is not a run record ledger reads" in r.stderr, r.stderr
    assert field in r.stderr
    # No ref and no log line: the objects it unpacked are unreachable, gc's to take.
    assert snapshot(fresh / ".ledger")[1] == before[1]
    assert not list((fresh / ".ledger" / "refs").rglob("*.*")) or not any(
        (fresh / ".ledger" / "refs" / "runs").glob("*")
    )
    ls = run_ledger("ls", "--json", cwd=fresh)
    assert ls.returncode == 0 and json.loads(ls.stdout) == []
    assert run_ledger("verify", cwd=fresh).returncode == 0


def test_an_odd_value_binds_as_text() -> None:
    assert bindable((None, 1, 2.5, "s", b"b", True)) == (None, 1, 2.5, "s", b"b", True)
    assert bindable((["a", {"b": 1}], 10**30, -(10**30))) == (
        '["a",{"b":1}]',
        str(10**30),
        str(-(10**30)),
    )


def test_a_run_whose_exit_code_sqlite_cannot_hold_is_let_in_and_listed(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    # A valid run record (any int is an exit code to the model) whose number is past SQLite's
    # 64 bits: the index binds it as its digits instead of stopping every listing.
    _, run_id, pkg = packaged
    bad = tmp_path / "big.ledgerpkg"
    _forge(pkg, run_id, bad, "exit_code", 10**30)
    r = run_ledger("import", str(bad), cwd=fresh)
    assert r.returncode == 0, r.stderr
    for args in (("ls",), ("reindex",), ("ls", "--json")):
        got = run_ledger(*args, cwd=fresh)
        assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
    assert str(10**30) in got.stdout
