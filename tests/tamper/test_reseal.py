"""Issue 36, point 1: a sealed run re-sealed, a run started again, an import over a ref, a verdict
flipped, each a well-formed line appended with a correct chain (and the ref file moved to
match), to a ledger made by real ``ledger record`` and ``ledger replay`` runs. ``verify`` and
``verify --head`` refuse them, and ``show``, ``ls`` after ``reindex`` and ``replay`` never
take the forged values. Point 17: a ref file that no log line made is refused by every
command that resolves run ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _support import run_ledger

from ledger._canonical import format_datetime
from ledger.store import Store
from ledger.store.atomic import atomic_write_bytes


def _head(project: Path) -> str:
    r = run_ledger("verify", "--json", cwd=project)
    assert r.returncode == 0, r.stdout
    return str(json.loads(r.stdout)["head"])


def _forge(store: Store, ref: str, op: str, new: str, **note: Any) -> None:
    """Append one correctly chained line and move the ref file to match."""
    old = store.refs.get(ref)
    now = format_datetime(datetime.now(UTC))
    store.log.append(op=op, ref=ref, old=old, new=new, time=now, **note)
    path = store.refs.path_of(ref)
    atomic_write_bytes(path, new.encode() + b"\n", store.tmp_dir)


def _run(store: Store, run_id: str) -> dict[str, Any]:
    rec = store.get_json(str(store.refs.get(f"runs/{run_id}")))
    assert isinstance(rec, dict)
    return rec


def _reseal_forged_metric(store: Store, ids: dict[str, str]) -> str:
    rec = _run(store, ids["good"])
    forged = rec | {"metrics": [m | {"last": 0.0001} for m in rec["metrics"]]}
    _forge(store, f"runs/{ids['good']}", "seal", store.put_json(forged), status="succeeded")
    return "runs/" + ids["good"]


def _reseal_other_contract(store: Store, ids: dict[str, str]) -> str:
    rec = _run(store, ids["good"])
    other = _run(store, ids["bad"])
    forged = rec | {"contract": other["contract"], "contract_digest": other["contract_digest"]}
    _forge(store, f"runs/{ids['good']}", "seal", store.put_json(forged), status="succeeded")
    return "runs/" + ids["good"]


def _start_again(store: Store, ids: dict[str, str]) -> str:
    rec = _run(store, ids["bad"]) | {"status": "running", "ended": None}
    _forge(store, f"runs/{ids['bad']}", "start", store.put_json(rec))
    return "runs/" + ids["bad"]


def _import_over(store: Store, ids: dict[str, str]) -> str:
    rec = _run(store, ids["bad"]) | {"status": "succeeded", "exit_code": 0}
    origin = {"origin": "00000000-0000-4000-8000-000000000000", "origin_head": None}
    _forge(store, f"runs/{ids['bad']}", "import", store.put_json(rec), **origin)
    return "runs/" + ids["bad"]


def _flip_verdict(store: Store, ids: dict[str, str]) -> str:
    ref, oid = next(store.refs.iter("verdicts/"))
    rec = store.get_json(oid)
    flipped = "diverged" if rec["outcome"] != "diverged" else "reproduced"
    _forge(store, ref, "verdict", store.put_json(rec | {"outcome": flipped}), outcome=flipped)
    return ref


ATTACKS: dict[str, Callable[[Store, dict[str, str]], str]] = {
    "reseal-forged-metric": _reseal_forged_metric,
    "reseal-other-contract": _reseal_other_contract,
    "start-on-sealed": _start_again,
    "import-over-a-ref": _import_over,
    "verdict-flipped": _flip_verdict,
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_forged_move_is_refused_everywhere(
    project: Path, sealed: tuple[Path, dict[str, str]], attack: str
) -> None:
    ids = sealed[1]
    head = _head(project)
    store = Store.open(project / ".ledger")
    before = {rid: _run(store, rid) for rid in ids.values()}
    ref = ATTACKS[attack](store, ids)

    r = run_ledger("verify", cwd=project)
    assert r.returncode == 1, r.stdout
    assert "transition:" in r.stdout and ref in r.stdout and "refused" in r.stdout, r.stdout
    assert run_ledger("verify", "--head", head, cwd=project).returncode == 1
    if ref.startswith("runs/"):
        # Its ref file holds the forged record and the log does not back it: refused.
        for command in ("show", "replay"):
            r = run_ledger(command, ref.split("/", 1)[1], cwd=project)
            assert r.returncode == 5, r.stdout + r.stderr
            assert "not backed by the log" in r.stderr and "ledger verify" in r.stderr
    if ref != f"runs/{ids['good']}":  # the run the verdict is about
        _shows_the_truth(project, ids, {ids["good"]: before[ids["good"]]})
    # reindex folds the log as it is (the line is refused there too) and sets the ref file
    # back to what the accepted lines say; the line stays, and verify still reports it.
    r = run_ledger("reindex", cwd=project)
    assert r.returncode == 0 and f"repaired ref {ref}" in r.stdout, r.stdout
    v = run_ledger("verify", cwd=project)
    assert "transition:" in v.stdout and "ref-mismatch" not in v.stdout, v.stdout
    _shows_the_truth(project, ids, before)


def _shows_the_truth(project: Path, ids: dict[str, str], before: dict[str, dict[str, Any]]) -> None:
    for run_id, rec in before.items():
        shown = run_ledger("show", run_id, "--json", cwd=project)
        assert shown.returncode == 0, shown.stderr
        info = json.loads(shown.stdout)
        assert info["run"]["metrics"] == rec["metrics"]
        assert info["run"]["status"] == rec["status"]
        assert info["run"]["contract"] == rec["contract"]
        verdicts = {v["outcome"] for v in info.get("verdicts", [])}
        assert not verdicts or verdicts == {before_outcome(project, ids)}


def before_outcome(project: Path, ids: dict[str, str]) -> str:
    """The verdict's outcome as the fold of the log holds it."""
    store = Store.open(project / ".ledger")
    (oid,) = [v for k, v in store.ref_state_from_log().items() if k.startswith("verdicts/")]
    return str(store.get_json(oid)["outcome"])


@pytest.mark.parametrize("command", ["show", "replay", "diff", "export", "attest"])
def test_a_ref_file_no_log_line_made_is_refused(
    project: Path, sealed: tuple[Path, dict[str, str]], command: str
) -> None:
    """A copy of a run's record under a new ``runs/`` ref file, written without a log line."""
    ids = sealed[1]
    store = Store.open(project / ".ledger")
    fake = ids["good"][:-1] + ("0" if ids["good"][-1] != "0" else "1")
    rec = _run(store, ids["good"]) | {"run_id": fake}
    path = store.refs.path_of(f"runs/{fake}")
    atomic_write_bytes(path, store.put_json(rec).encode() + b"\n", store.tmp_dir)
    args = {
        "show": [fake],
        "replay": [fake],
        "diff": [ids["good"], fake],
        "export": [fake, "-o", str(project / "x.ledgerpkg")],
        "attest": [fake, "--key", str(project / "key.pem")],
    }[command]
    if command == "attest":
        assert run_ledger("keygen", str(project / "key.pem"), cwd=project).returncode == 0
    r = run_ledger(command, *args, cwd=project)
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the ref file of run {fake} is not backed by the log" in r.stderr
    assert "no accepted log line made it" in r.stderr and "ledger verify" in r.stderr
    v = run_ledger("verify", cwd=project)
    assert v.returncode == 1 and f"ref-mismatch: ref runs/{fake} holds" in v.stdout
