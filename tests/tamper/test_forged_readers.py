"""Issue 36, points 1 and 17: every reader that takes a ref file to decide what to show, export,
audit or load goes through the fold-backed lookup (``ledger.run.find.backed_ref``). A ref file
moved by hand (no accepted log line made it) or moved with a chained line the fold refuses is
never shown by the web view, carried by an export, selected by an audit or loaded as a
checkpoint; and ``Store.set_ref`` refuses, before writing, a move the table forbids. Each runs
on a real ledger made by ``ledger record`` and ``ledger replay`` (``tests/_sealed.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

from ledger._canonical import format_datetime
from ledger.errors import IntegrityError, UsageError
from ledger.store import Store
from ledger.store.atomic import atomic_write_bytes


def _by_hand(store: Store, ref: str, oid: str) -> None:
    """Move a ref file with no log line."""
    path = store.refs.path_of(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, oid.encode() + b"\n", store.tmp_dir)


def _chained(store: Store, ref: str, op: str, oid: str, **note: Any) -> None:
    """Append a correctly chained line the fold refuses, and move the ref file to match."""
    old = store.refs.get(ref)
    store.log.append(op=op, ref=ref, old=old, new=oid, time=format_datetime(datetime.now(UTC)))
    _by_hand(store, ref, oid)


def _record(store: Store, ref: str) -> dict[str, Any]:
    rec = store.get_json(str(store.refs.get(ref)))
    assert isinstance(rec, dict)
    return rec


def _forged_replay(store: Store, ids: dict[str, str], how: str) -> str:
    """The replay's ref file moved to a record with another name; returns that name."""
    ref = f"runs/{ids['replay']}"
    forged = store.put_json(_record(store, ref) | {"name": "FORGED-NAME"})
    if how == "by-hand":
        _by_hand(store, ref, forged)
    else:
        _chained(store, ref, "seal", forged, status="succeeded")
    return "FORGED-NAME"


def _flipped_verdict(store: Store, how: str) -> tuple[str, str]:
    ref, oid = next(store.refs.iter("verdicts/"))
    rec = store.get_json(oid)
    flipped = "diverged" if rec["outcome"] != "diverged" else "reproduced"
    forged = store.put_json(rec | {"outcome": flipped})
    if how == "by-hand":
        _by_hand(store, ref, forged)
    else:
        _chained(store, ref, "verdict", forged, outcome=flipped)
    return ref, forged


HOW = ["by-hand", "chained-line"]


CLAIMS = (
    "claims:\n  - id: c1\n    metric: loss\n    higher_is_better: false\n"
    "    value: 0.3\n    runs: {names: [b]}\n"
)


def _audit(project: Path) -> str:
    """A real ``ledger audit`` of the sealed project; its audit id."""
    (project / "claims.yaml").write_text(CLAIMS)
    run_ledger("audit", "claims.yaml", cwd=project)
    (name,) = Store.open(project / ".ledger").refs.names("audits/")
    return name.split("/", 1)[1]


@pytest.mark.parametrize("how", HOW)
def test_the_web_view_shows_no_audit_the_log_does_not_back(project: Path, how: str) -> None:
    from ledger.ui import data

    store = Store.open(project / ".ledger")
    if how == "by-hand":
        audit_id = "20991231T000000Z-forged"
        fake = {"kind": "audit", "schema": 1, "counts": {"forged": 7}, "claims": []}
        _by_hand(store, f"audits/{audit_id}", store.put_json(fake))
    else:
        audit_id = _audit(project)
        rec = store.get_json(str(store.refs.get(f"audits/{audit_id}")))
        forged = store.put_json(rec | {"counts": {"forged": 7}})
        _chained(store, f"audits/{audit_id}", "audit", forged, exit_code=0)
    assert audit_id not in {a["audit_id"] for a in data.audits(store)}
    warnings: list[str] = []
    assert audit_id not in {a["audit_id"] for a in data.audits(store, warnings=warnings)}
    assert any(f"audits/{audit_id}" in w and "not backed" in w for w in warnings), warnings
    with pytest.raises(IntegrityError, match="not backed by the log"):
        data.audit_html(store, audit_id)  # the live server's /audits/<id>.html
    # `ledger report` lists and writes only the audits the log backs.
    site = project.parent / "site"
    runs = [n.split("/", 1)[1] for n in store.refs.names("runs/")]
    r = run_ledger("report", *runs[:1], "-o", str(site), cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    shown = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "7 forged" not in shown
    assert not (site / "audits" / f"{audit_id}.html").exists()


@pytest.mark.parametrize("how", HOW)
def test_an_export_never_carries_a_forged_verdict(
    project: Path, sealed: tuple[Path, dict[str, str]], how: str
) -> None:
    from ledger.share.closure import run_closure

    ids = sealed[1]
    store = Store.open(project / ".ledger")
    ref, forged = _flipped_verdict(store, how)
    closure = run_closure(store, [ids["good"]])
    assert closure.refs.get(ref) != forged and forged not in closure.objects
    assert any(ref in n and "not backed by the log" in n for n in closure.notes), closure.notes
    # The package a teammate gets holds no verdict the log does not back: it verifies.
    pkg = project / "x.ledgerpkg"
    r = run_ledger("export", ids["good"], "-o", str(pkg), cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    other = project.parent / "other"
    other.mkdir()
    init_ledger(other)
    assert run_ledger("import", str(pkg), cwd=other).returncode == 0
    assert run_ledger("verify", cwd=other).returncode == 0


@pytest.mark.parametrize("how", HOW)
def test_an_export_refuses_a_forged_replay_a_verdict_names(
    project: Path, sealed: tuple[Path, dict[str, str]], how: str
) -> None:
    ids = sealed[1]
    _forged_replay(Store.open(project / ".ledger"), ids, how)
    r = run_ledger("export", ids["good"], "-o", str(project / "x.ledgerpkg"), cwd=project)
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the ref file of run {ids['replay']} is not backed" in r.stderr
    assert "ledger verify" in r.stderr and not (project / "x.ledgerpkg").exists()


def test_an_audit_selects_no_run_and_no_verdict_the_log_does_not_back(
    project: Path, sealed: tuple[Path, dict[str, str]]
) -> None:
    from ledger.audit.replays import recorded_replays
    from ledger.audit.select import load_runs

    ids = sealed[1]
    store = Store.open(project / ".ledger")
    fake = ids["good"][:-1] + ("0" if ids["good"][-1] != "0" else "1")
    rec = _record(store, f"runs/{ids['good']}") | {"run_id": fake}
    _by_hand(store, f"runs/{fake}", store.put_json(rec))
    _flipped_verdict(store, "chained-line")
    assert fake not in {r.run_id for r in load_runs(store)}
    warnings: list[str] = []
    assert ids["good"] in {r.run_id for r in load_runs(store, warnings)}
    assert any(f"run {fake}" in w and "no accepted log line" in w for w in warnings), warnings
    # The flipped verdict is left out (the replay's evidence is missing, never forged).
    (verdict,) = store.refs.names("verdicts/")
    assert ids["good"] not in recorded_replays(store, warnings)
    assert any(verdict in w and "not backed" in w for w in warnings), warnings
    # `ledger audit` says what it left out.
    (project / "claims.yaml").write_text(CLAIMS)
    r = run_ledger("audit", "claims.yaml", cwd=project)
    assert "warning:" in r.stderr and f"run {fake}" in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("how", HOW)
def test_latest_is_never_loaded_from_a_forged_ref(
    project: Path, sealed: tuple[Path, dict[str, str]], how: str
) -> None:
    from ledger.torch.checkpoint.common import resolve_checkpoint

    ids = sealed[1]
    store = Store.open(project / ".ledger")
    run = ids["good"]
    a = store.put_json({"kind": "checkpoint-stub", "schema": 1, "n": 1})
    b = store.put_json({"kind": "checkpoint-stub", "schema": 1, "n": 2})
    store.set_refs(
        [
            (f"checkpoints/{run}/step-1", a, "checkpoint", {}),
            (f"checkpoints/{run}/latest", a, "publish", {}),
        ]
    )
    assert resolve_checkpoint(store, "latest", run) == a
    if how == "by-hand":
        _by_hand(store, f"checkpoints/{run}/latest", b)
    else:
        _chained(store, f"checkpoints/{run}/latest", "delete", b)
    for target in ("latest", f"checkpoints/{run}/latest", run):
        with pytest.raises(IntegrityError, match="not backed by the log"):
            resolve_checkpoint(store, target, run)


def test_set_ref_refuses_a_forbidden_move_before_writing(
    project: Path, sealed: tuple[Path, dict[str, str]]
) -> None:
    ids = sealed[1]
    store = Store.open(project / ".ledger")
    ref = f"runs/{ids['good']}"
    held = store.refs.get(ref)
    log = store.log.path.read_bytes()
    forged = store.put_json(_record(store, ref) | {"name": "again"})
    attempts = [
        lambda: store.set_ref(ref, forged, op="seal", status="succeeded"),
        lambda: store.set_ref(ref, forged),
        lambda: store.set_refs([("notes/fine", forged, "set", {}), (ref, forged, "start", {})]),
        lambda: store.delete_ref(ref),
    ]
    for attempt in attempts:
        with pytest.raises(UsageError, match="is not allowed on a sealed run ref"):
            attempt()
    assert store.refs.get(ref) == held and store.refs.get("notes/fine") is None
    assert store.log.path.read_bytes() == log
    assert run_ledger("verify", cwd=project).returncode == 0
