"""Checkpoint saves, retention and gc leave a ledger that verify and attestations accept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.attest import attest_run, generate_key, load_private_key, load_public_key
from ledger.attest import verify_attestation as check
from ledger.index.consistency import check_consistency
from ledger.store import Store
from ledger.store.gc import collect_garbage

SCRIPT = (
    "import torch\n"
    "from ledger.torch import save_checkpoint\n"
    "w = torch.nn.Linear(8, 8)\n"
    "for step in range(4):\n"
    "    with torch.no_grad():\n"
    "        w.weight.add_(1.0)\n"
    "    save_checkpoint({'model': w}, step=step, keep_last=2)\n"
)


@pytest.mark.torch
def test_checkpoints_with_retention_are_consistent_and_attested(tmp_path: Path) -> None:
    (tmp_path / "ret.py").write_text(SCRIPT)
    init_ledger(tmp_path)
    r = run_ledger("record", "--", sys.executable, "ret.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    store = Store.open(tmp_path / ".ledger")
    collect_garbage(store, delete=True, grace_seconds=0)
    assert check_consistency(store) == []
    v = run_ledger("verify", cwd=tmp_path)
    assert v.returncode == 0, v.stdout

    ops = [json.loads(x)["op"] for x in store.log.path.read_bytes().splitlines()]
    assert {"checkpoint", "publish", "delete", "start", "seal"} <= set(ops)
    key = tmp_path / "k.pem"
    generate_key(key)
    run_id = next(n for n, _ in store.refs.iter("runs/")).split("/", 1)[1]
    envelope, statement = attest_run(store, run_id, load_private_key(key))
    names = [s["name"] for s in statement["subject"]]
    assert names == [f"ledger-run/{run_id}", "checkpoint/step-2", "checkpoint/step-3"]
    report = check(store, envelope, load_public_key(key))
    assert report.ok, report.problems

    # A tensor chunk of a kept checkpoint goes missing: the attestation no longer holds.
    from ledger.store.walk import reachable

    ckpt = "b3:" + statement["subject"][-1]["digest"]["blake3"]
    chunk = sorted(reachable(store.objects, [ckpt]) - {ckpt})[-1]
    store.objects.delete(chunk)
    report = check(store, envelope, load_public_key(key))
    assert any(chunk in p and "missing" in p for p in report.problems), report.problems
