"""`ledger.start()`: a run created from inside Python, sealed on exit and on failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _support import init_ledger, run_ledger, subprocess_env

from ledger.run.find import load_run
from ledger.store import Store

SCRIPT = """
import sys
import ledger
with ledger.start(name="nb", config={"lr": 0.1, "layers": [2, 3]}, inputs=["data.txt"],
                  outputs=["out"], tags={"kind": "notebook"}) as run:
    ledger.seed(7)
    for step in range(4):
        run.log(step=step, loss=1.0 / (step + 1))
    open("out/result.txt", "w").write("done")
    if len(sys.argv) > 1:
        raise RuntimeError("boom")
"""


def _runs(tmp: Path) -> list[str]:
    return [r["run_id"] for r in json.loads(run_ledger("ls", "--json", cwd=tmp).stdout)]


def _setup(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(SCRIPT)
    (tmp_path / "data.txt").write_text("x\n")
    (tmp_path / "out").mkdir()
    init_ledger(tmp_path)


def test_start_seals_a_complete_run(tmp_path: Path) -> None:
    _setup(tmp_path)
    r = subprocess.run(
        [sys.executable, "t.py"], cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    store = Store.open(tmp_path / ".ledger")
    (run_id,) = _runs(tmp_path)
    _, run = load_run(store, run_id)
    assert run.status == "succeeded" and run.name == "nb" and run.tags == {"kind": "notebook"}
    loss = next(m for m in run.metrics if m.name == "loss")
    assert loss.count == 4 and loss.last == 0.25
    assert run.runtime is not None and run.runtime["seeds"]
    assert [o.files for o in run.outputs] == [1]
    contract = store.get_json(run.contract)
    assert contract["inputs"][0]["path"] == "data.txt"
    config = store.get_json(run.resolved_config)
    assert config["resolved"]["layers"] == [2, 3]
    assert not (tmp_path / ".ledger" / "staging" / run_id).exists()


def test_start_seals_a_failed_run_when_the_block_raises(tmp_path: Path) -> None:
    _setup(tmp_path)
    r = subprocess.run(
        [sys.executable, "t.py", "fail"],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "boom" in r.stderr
    (run_id,) = _runs(tmp_path)
    _, run = load_run(Store.open(tmp_path / ".ledger"), run_id)
    assert run.status == "failed" and run.exit_code == 1
    assert next(m for m in run.metrics if m.name == "loss").count == 4


def test_start_under_record_reuses_the_recorded_run(tmp_path: Path) -> None:
    _setup(tmp_path)
    r = run_ledger("record", "--", sys.executable, "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(_runs(tmp_path)) == 1


def test_start_config_secrets_never_reach_the_disk(tmp_path: Path) -> None:
    secret = "Zq81kLm9xxQ"
    (tmp_path / "s.py").write_text(
        "import os, pathlib, ledger\n"  # the value comes from outside the code snapshot
        "with ledger.start(config={'lr': 0.1, 'api': {'token': os.environ['VALUE']}}):\n"
        "    staged = pathlib.Path(os.environ['LEDGER_RUN_DIR'])\n"
        "    files = [p.read_bytes() for p in staged.rglob('*') if p.is_file()]\n"
        "    leak = any(os.environb[b'VALUE'] in d for d in files)\n"
        "    print('LEAK' if leak else 'clean', len(files))\n"
    )
    init_ledger(tmp_path)
    r = subprocess.run(
        [sys.executable, "s.py"],
        cwd=tmp_path,
        env=subprocess_env(VALUE=secret),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("clean") and not r.stdout.startswith("clean 0"), r.stdout
    store = Store.open(tmp_path / ".ledger")
    leaked = [store.objects.get_bytes(o)[:300] for o in store.objects]
    assert not [d for d in leaked if secret.encode() in d], leaked
