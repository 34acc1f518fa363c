"""``ledger tag``, ``rename`` and ``retract`` on real recorded runs: each is a log entry that
``verify`` folds and ``reindex`` rebuilds; the run record is never touched; a retracted run is
hidden from ``ls``, kept, verifiable, and an audit that uses it warns."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from _read_project import ledger_ok, log_lines, ls
from _support import run_ledger

from ledger._canonical import format_datetime
from ledger.store import Store
from ledger.store.atomic import atomic_write_bytes


def _verify(repo: Path) -> dict[str, object]:
    r = run_ledger("verify", "--json", cwd=repo)
    report: dict[str, object] = json.loads(r.stdout)
    assert (r.returncode == 0) == bool(report["ok"]), r.stderr
    return report


def test_curation_is_logged_folded_and_rebuilt(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    store = Store.open(repo / ".ledger")
    run_oid = store.refs.get(f"runs/{ids['b']}")
    ledger_ok("tag", ids["b"], "owner=ana", "split=v2", cwd=repo)
    ledger_ok("rename", ids["b"], "lr-small", cwd=repo)
    out = ledger_ok("retract", "lr-small", "--reason", "trained on the test split", cwd=repo)
    assert f"retracted run {ids['b']}" in out
    lines = log_lines(repo)[-3:]
    assert [(d["op"], d["ref"]) for d in lines] == [
        (op, f"curation/{ids['b']}") for op in ("tag", "rename", "retract")
    ]
    # The chain of curation records: each names the one it replaces.
    assert lines[0]["old"] is None and lines[1]["old"] == lines[0]["new"]
    last = store.get_json(lines[2]["new"])
    assert last["previous"] == lines[1]["new"] and last["retracted"] is True
    assert last["name"] == "lr-small" and last["tags"] == {"owner": "ana", "split": "v2"}
    # The run itself is untouched and still verifies; the index equals a fresh fold.
    assert store.refs.get(f"runs/{ids['b']}") == run_oid
    report = _verify(repo)
    assert report["ok"], report["problems"]
    # Hidden from ls, never deleted.
    assert ids["b"] not in [r["run_id"] for r in ls(repo)]
    shown = {r["run_id"]: r for r in ls(repo, "--retracted")}
    assert shown[ids["b"]]["retracted"]["reason"] == "trained on the test split"
    assert shown[ids["b"]]["name"] == "lr-small" and shown[ids["b"]]["recorded_name"] == "sweep"
    assert shown[ids["b"]]["tags"] == {"owner": "ana", "split": "v2"}
    assert "lr-small (retracted)" in ledger_ok("ls", "--retracted", cwd=repo)
    shown_json = json.loads(ledger_ok("show", ids["b"], "--json", cwd=repo))
    assert shown_json["run"]["run_id"] == ids["b"] and shown_json["curation"]["retracted"]
    text = ledger_ok("show", ids["b"], cwd=repo)
    assert "RETRACTED" in text and "trained on the test split" in text
    assert "name      lr-small (recorded as sweep)" in text and "owner=ana" in text
    # The index is a cache: thrown away and rebuilt from the log, it says the same.
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (repo / ".ledger" / name).unlink(missing_ok=True)
    assert ids["b"] not in [r["run_id"] for r in ls(repo)]
    ledger_ok("reindex", cwd=repo)
    assert _verify(repo)["ok"]
    assert ids["b"] in [r["run_id"] for r in ls(repo, "--retracted")]


def test_curated_names_and_tags_answer_filters(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    ledger_ok("tag", ids["a"], "team=y", "stage=final", cwd=repo)
    ledger_ok("rename", ids["a"], "chosen", cwd=repo)
    # The curated tag wins over the recorded one (team=x), and filters see it.
    for args, want in [
        (["--tag", "team=y"], [ids["a"]]),
        (["--tag", "team=x"], []),
        (["-w", "tags.stage = final"], [ids["a"]]),
        (["-w", "tags.team = x"], []),
        (["-w", "name = chosen"], [ids["a"]]),
        (["-w", "name = sweep"], [ids["b"]]),
        (["--name", "chosen"], [ids["a"]]),
    ]:
        assert [r["run_id"] for r in ls(repo, *args, replays=False)] == want, args
    # The new name resolves the run like its recorded one.
    assert json.loads(ledger_ok("show", "chosen", "--json", cwd=repo))["run"]["run_id"] == ids["a"]


def test_search_finds_runs_by_their_curated_name_and_tags(
    proj: tuple[Path, dict[str, str]],
) -> None:
    """``ls --search`` reads the curation too: a tag or a name given after the fact finds the
    run, the recorded name still does, and a tag the curation replaced no longer does."""
    repo, ids = proj
    ledger_ok("tag", ids["a"], "team=y", "stage=shortlisted", cwd=repo)
    ledger_ok("rename", ids["a"], "chosen", cwd=repo)
    for query, want in [
        ("shortlisted", [ids["a"]]),
        ("chosen", [ids["a"]]),
        ("stage=shortlisted", [ids["a"]]),
        ("tags:team=y", [ids["a"]]),
        ("tags:team=x", []),  # recorded, then replaced by the curation
        ("nothing-like-this", []),
    ]:
        assert [r["run_id"] for r in ls(repo, "--search", query, replays=False)] == want, query
    # The recorded name finds it too (the name column holds both).
    assert ids["a"] in [r["run_id"] for r in ls(repo, "--search", "sweep", replays=False)]


def test_bad_input_is_refused_and_writes_nothing(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    before = log_lines(repo)
    cases = [
        (["tag", "no-such-run", "k=v"], "no run 'no-such-run'"),
        (["tag", ids["a"], "novalue"], "is not KEY=VALUE"),
        (["tag", ids["a"], "=v"], "is not KEY=VALUE"),
        (["tag", ids["a"], "k="], "is not KEY=VALUE"),
        (["rename", ids["a"], "  "], "the name is empty"),
        (["rename", ids["a"], "two\nlines"], "one line"),
        (["retract", ids["a"], "--reason", ""], "the reason is empty"),
        (["retract", ids["a"]], "--reason"),
        (["retract", "no-such-run", "--reason", "x"], "no run 'no-such-run'"),
    ]
    for args, said in cases:
        r = run_ledger(*args, cwd=repo)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert said in r.stderr, (args, r.stderr)
    assert log_lines(repo) == before
    ledger_ok("retract", ids["a"], "--reason", "leak", cwd=repo)
    again = run_ledger("retract", ids["a"], "--reason", "twice", cwd=repo)
    assert again.returncode == 2 and "already retracted" in again.stderr
    assert len(log_lines(repo)) == len(before) + 1


def _forge(store: Store, ref: str, op: str, rec: dict[str, object]) -> None:
    """A correctly chained line and the ref file moved to match, as a forger writes them."""
    now = format_datetime(datetime.now(UTC))
    oid = store.put_json(rec | {"created": now})
    old = store.refs.get(ref)
    store.log.append(op=op, ref=ref, old=old, new=oid, time=now)
    atomic_write_bytes(store.refs.path_of(ref), oid.encode() + b"\n", store.tmp_dir)


def test_a_retraction_cannot_be_undone_by_a_forged_line(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    ledger_ok("retract", ids["a"], "--reason", "leak", cwd=repo)
    store = Store.open(repo / ".ledger")
    ref = f"curation/{ids['a']}"
    held = store.get_json(str(store.refs.get(ref)))
    # A well-chained `tag` line whose record drops the retraction.
    _forge(
        store,
        ref,
        "tag",
        held | {"op": "tag", "previous": store.refs.get(ref), "retracted": False, "reason": None},
    )
    report = _verify(repo)
    assert not report["ok"]
    problems = [p for p in report["problems"] if p["kind"] == "log-record"]  # type: ignore[index,union-attr]
    assert any("drops the retraction" in p["message"] for p in problems), report["problems"]
    # A plain `set` on a curation ref is not a move the format allows.
    _forge(store, ref, "set", held)
    kinds = {p["kind"] for p in _verify(repo)["problems"]}  # type: ignore[union-attr]
    assert "transition" in kinds


def test_an_edited_index_cannot_unhide_a_retracted_run(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    ledger_ok("retract", ids["a"], "--reason", "leak", cwd=repo)
    ls(repo)  # the index folds the retraction; then it is edited out of the index
    db = sqlite3.connect(repo / ".ledger" / "index.sqlite")
    db.execute("DELETE FROM curation")
    db.commit()
    db.close()
    r = run_ledger("ls", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert ids["a"] not in [row["run_id"] for row in json.loads(r.stdout)]
    assert f"the index disagrees with the curation of run {ids['a']}" in r.stderr
    assert not _verify(repo)["ok"]


def test_audit_warns_when_a_claim_uses_a_retracted_run(proj: tuple[Path, dict[str, str]]) -> None:
    repo, ids = proj
    claims = repo / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - id: sweep-loss\n"
        "    metric: loss\n"
        "    higher_is_better: false\n"
        "    below: 1.0\n"
        "    split: val\n"
        "    runs: {names: [sweep]}\n"
    )
    before = run_ledger("audit", str(claims), "--json", cwd=repo)
    assert "retracted" not in before.stdout + before.stderr
    ledger_ok("retract", ids["b"], "--reason", "wrong data split", cwd=repo)
    r = run_ledger("audit", str(claims), "--json", cwd=repo)
    assert r.returncode == before.returncode, r.stderr
    assert f"uses retracted run {ids['b']}: wrong data split" in r.stderr
    (claim,) = json.loads(r.stdout)["record"]["claims"]
    assert f"uses retracted run {ids['b']}: wrong data split" in claim["reasons"]
