"""Every move of the transition table (docs/format.md, "Transitions"), allowed or not, written
as a real, correctly chained log line appended to a ledger made by real ``ledger record`` runs,
with the ref file moved to match (as a forger would): ``ledger verify`` passes the allowed
ones and refuses every other with a ``transition`` problem naming the line, exit 1."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledger._canonical import format_datetime
from ledger.capture.gitsource import build_git_source
from ledger.cli.app import app
from ledger.store import Store
from ledger.store.atomic import atomic_write_bytes
from ledger.store.fold import ABSENT, KINDS, RefKind

OPS = sorted({op for k in KINDS for (_, op) in k.moves})
# A ref of each kind that the fixture does not hold yet ({good}: the good run's id).
REF = {
    "run": "runs/{new}",
    "verdict": "verdicts/{good}/{bad}",
    "audit": "audits/aud-t",
    "check": "checks/chk-t",
    "gate": "gates/gate-t",
    "checkpoint step": "checkpoints/{good}/step-3",
    "latest checkpoint": "checkpoints/{good}/latest",
    "carried commit": "sources/git/{commit}",
    "curation": "curation/{good}",
    "other": "notes/t",
}
# The note each op's line carries (it repeats a field of the record, or names an origin).
NOTE_KEYS = {
    "seal": ["status"],
    "verdict": ["outcome"],
    "audit": ["exit_code"],
    "checkpoint": ["step"],
    "publish": ["step"],
    "check": ["passed"],
    "gate": ["passed"],
}


def _states(kind: RefKind) -> list[str]:
    return sorted({ABSENT} | {s for s, _ in kind.moves} | set(kind.moves.values()))


def _cases() -> list[Any]:
    out = []
    for kind in KINDS:
        for state in _states(kind):
            for op in OPS:
                allowed = (state, op) in kind.moves
                out.append(pytest.param(kind, state, op, allowed, id=f"{kind.name}-{state}-{op}"))
                if (state, op) in kind.same_object:
                    # Allowed only as the object it holds: another one is refused.
                    out.append(
                        pytest.param(
                            kind, state, op, False, id=f"{kind.name}-{state}-{op}-other-object"
                        )
                    )
    return out


class _Ledger:
    """The copied fixture ledger, and records of each kind fit for each op."""

    def __init__(self, project: Path, ids: dict[str, str]) -> None:
        self.project = project
        self.store = Store.open(project / ".ledger")
        self.ids = ids | {"new": ids["good"][:-1] + ("0" if ids["good"][-1] != "0" else "1")}
        self.n = 0
        self.commits: list[str] = []
        good = self.store.refs.get(f"runs/{ids['good']}")
        self.run = self.store.get_json(str(good))
        verdict = next(oid for _, oid in self.store.refs.iter("verdicts/"))
        self.verdict = self.store.get_json(verdict)

    def commit(self) -> str:
        """A new commit of the project (empty), for a carried commit record: one that
        ``ledger verify`` finds to be the commit it names, as a real carried commit is."""
        git = ["git", "-C", str(self.project), "-c", "user.name=t", "-c", "user.email=t@e.org"]
        subprocess.run(
            [*git, "commit", "-q", "--allow-empty", "-m", f"t{len(self.commits)}"], check=True
        )
        head = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        self.commits.append(head.stdout.strip())
        return self.commits[-1]

    def ref(self, kind: RefKind) -> str:
        if kind.name == "carried commit" and not self.commits:
            self.commit()
        return REF[kind.name].format(**self.ids, commit=self.commits[0] if self.commits else "")

    def record(self, kind: RefKind, op: str) -> dict[str, Any]:
        """A new record (never one stored before) of ``kind``, as ``op`` would log it."""
        self.n += 1
        now = "2026-01-01T00:00:00.000000Z"
        if kind.name == "run":
            status = "running" if op == "start" else "succeeded"
            return self.run | {"run_id": self.ids["new"], "status": status, "name": f"t{self.n}"}
        if kind.name == "verdict":
            return (
                self.verdict
                | {"original": self.ids["good"], "replays": [self.ids["bad"]]}
                | {"summary": f"t{self.n}"}
            )
        if kind.name == "carried commit":
            # The ref's own commit first; any later record is of another commit (a new object
            # under that ref: refused by the fold, and not the commit the ref names).
            commit = self.commits[0] if self.n == 1 else self.commit()
            return build_git_source(self.store, self.project, commit).to_json()
        if kind.name == "curation":
            # One link of the run's curation chain, as `ledger tag/rename/retract` write it.
            old = self.store.refs.get(self.ref(kind))
            before = self.store.get_json(old) if old else {}
            retracted = op == "retract" or before.get("retracted") is True
            return {
                "kind": "curation",
                "schema": 1,
                "run_id": self.ids["good"],
                "op": op,
                "previous": old,
                "created": now,
                "name": f"t{self.n}",
                "tags": {},
                "retracted": retracted,
                "reason": "r" if retracted else None,
            }
        plain = {"schema": 1, "created": now, "note": f"t{self.n}"}
        return {
            "audit": {"kind": "audit", "audit_id": "aud-t", "exit_code": 0},
            "check": {"kind": "check", "check_id": "chk-t", "passed": True},
            "gate": {"kind": "gate", "gate_id": "gate-t", "passed": True},
            "checkpoint step": {"kind": "checkpoint", "run_id": self.ids["good"], "step": 3},
            "latest checkpoint": {"kind": "checkpoint", "run_id": self.ids["good"], "step": 3},
            "other": {"kind": "note"},
        }[kind.name] | plain

    def append(self, ref: str, op: str, new: str | None) -> None:
        """One correctly chained line, and the ref file moved to match (a forger's write)."""
        old = self.store.refs.get(ref)
        note: dict[str, Any] = {}
        if new is not None:
            rec = self.store.get_json(new)
            note = {k: rec.get(k) for k in NOTE_KEYS.get(op, [])}
        if op == "import":
            note = {"origin": "00000000-0000-4000-8000-000000000000", "origin_head": None}
        now = format_datetime(datetime.now(UTC))
        self.store.log.append(op=op, ref=ref, old=old, new=new, time=now, **note)
        path = self.store.refs.path_of(ref)
        if new is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, new.encode() + b"\n", self.store.tmp_dir)

    def move(self, kind: RefKind, op: str, *, same_object: bool = False) -> None:
        ref = self.ref(kind)
        if op == "delete":
            new = None
        elif same_object:
            new = self.store.refs.get(ref)
        else:
            new = self.store.put_json(self.record(kind, op))
        self.append(ref, op, new)

    def reach(self, kind: RefKind, state: str) -> None:
        """Bring the kind's ref from absent to ``state`` by allowed moves."""
        paths: dict[str, list[str]] = {ABSENT: []}
        frontier = [ABSENT]
        while frontier:
            s = frontier.pop(0)
            for (a, op), b in sorted(kind.moves.items()):
                if a == s and b not in paths:
                    paths[b] = [*paths[s], op]
                    frontier.append(b)
        for op in paths[state]:
            self.move(kind, op)


def _verify(project: Path) -> tuple[int, dict[str, Any]]:
    """``ledger verify``'s exit code and report, less its ``malformed-record`` problems: the
    records here are stubs carrying only what the moves need (the record check has its own
    tests, tests/tamper/test_malformed_records.py)."""
    res = CliRunner().invoke(app, ["verify", "--json", "--ledger", str(project / ".ledger")])
    report = json.loads(res.stdout)
    problems = [p for p in report["problems"] if p["kind"] != "malformed-record"]
    if len(problems) < len(report["problems"]):
        report |= {"problems": problems, "ok": not problems}
        return (0 if not problems else res.exit_code), report
    return res.exit_code, report


@pytest.mark.parametrize(("kind", "state", "op", "allowed"), _cases())
def test_each_move_of_the_table(
    project: Path,
    sealed: tuple[Path, dict[str, str]],
    kind: RefKind,
    state: str,
    op: str,
    allowed: bool,
) -> None:
    led = _Ledger(project, sealed[1])
    led.reach(kind, state)
    led.move(kind, op, same_object=allowed and (state, op) in kind.same_object)
    code, report = _verify(project)
    if allowed:
        assert code == 0 and report["ok"], report["problems"]
        return
    assert code == 1 and not report["ok"]
    where = f"log line {report['log_entries']}"  # the line just appended
    moves = [p for p in report["problems"] if p["kind"] == "transition"]
    assert [p["subject"] for p in moves] == [where], report["problems"]
    message = moves[0]["message"]
    assert led.ref(kind) in message and "refused" in message, message
    # Nothing else is wrong: the line's record may be of another kind than its op logs, the
    # ref file the forger moved is not what the fold (which refused the line) holds, and a
    # carried commit's ref file moved to another commit's record is not the commit it names.
    others = [p for p in report["problems"] if p not in moves]
    expected = {("ref-mismatch", led.ref(kind)), ("log-record", where)}
    expected.add(("forged-source", led.ref(kind)))
    assert all((p["kind"], p["subject"]) in expected for p in others), others
