"""`ledger check` and `ledger gate` end to end: real subprocesses, a real ledger, exit codes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger, subprocess_env

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

HERE = Path(__file__).parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    shutil.copy(HERE / "gate_models.py", repo / "gate_models.py")
    (repo / ".gitignore").write_text(".ledger/\n*.pt\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    init_ledger(repo)
    return repo


def test_check_binds_to_a_run_and_show_lists_it(project: Path) -> None:
    rec = run_ledger("record", "-n", "train", "--", "python", "-c", "print(1)", cwd=project)
    assert rec.returncode == 0, rec.stderr
    runs = json.loads(run_ledger("ls", "--json", cwd=project).stdout)
    run_id = runs[0]["run_id"]
    r = run_ledger(
        "check", "gate_models:mlp_spec", "--levels", "static,one-step", "--run", "train",
        "--json", cwd=project,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["run_id"] == run_id and out["passed"] and out["levels"] == ["static", "one-step"]
    show = run_ledger("show", run_id, cwd=project)
    assert f"check     {out['check_id']}: passed" in show.stdout, show.stdout
    assert run_ledger("verify", cwd=project).returncode == 0


def test_check_under_record_binds_to_that_run(project: Path) -> None:
    r = run_ledger(
        "record", "-n", "checked", "--", "python", "-m", "ledger", "check",
        "gate_models:mlp_spec", "--levels", "static", cwd=project,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = json.loads(run_ledger("ls", "--json", cwd=project).stdout)[0]["run_id"]
    show = run_ledger("show", run_id, "--json", cwd=project)
    (linked,) = json.loads(show.stdout)["checks"]
    assert linked["kind"] == "check" and linked["passed"] is True


def test_check_exit_codes(project: Path) -> None:
    bad = run_ledger(
        "check", "gate_models:unused_head_spec", "--levels", "one-step,overfit", cwd=project
    )
    assert bad.returncode == 1
    assert "FAIL  one-step/gradients" in bad.stdout and "aux_head.weight" in bad.stdout
    assert "FAILED at one-step" in bad.stdout and "overfit/" not in bad.stdout
    usage = run_ledger("check", "gate_models:nope", cwd=project)
    assert usage.returncode == 2 and usage.stderr.startswith("ledger: error: ")
    assert "Traceback" not in usage.stderr
    level = run_ledger("check", "gate_models:mlp_spec", "--levels", "warp", cwd=project)
    assert level.returncode == 2 and "unknown level" in level.stderr


def test_gate_exit_code_reports_and_verify(project: Path) -> None:
    code = (
        "import torch, gate_models as g; torch.manual_seed(0);"
        "torch.save(g.MLP().state_dict(), 'good.pt');"
        "torch.save(g.Plain().state_dict(), 'plain.pt')"
    )
    # This interpreter and this checkout's ledger (gate_models imports it), not whatever
    # `python` is first on PATH and whichever ledger it has installed.
    subprocess.run([sys.executable, "-c", code], cwd=project, env=subprocess_env(), check=True)
    (project / "gate.yaml").write_text("entry: gate_models:mlp_spec\npoison: {huge_batch: 64}\n")
    ok = run_ledger(
        "gate", "good.pt", "--spec", "gate.yaml", "--checks", "poison",
        "--markdown", "r.md", "--html", "r.html", cwd=project,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "gate PASSED" in ok.stdout and "stored as gates/" in ok.stdout
    assert "| pass | poison/NaN |" in (project / "r.md").read_text()
    assert "<table>" in (project / "r.html").read_text()
    bad = run_ledger(
        "gate", "plain.pt", "--spec", "gate_models:plain_spec", "--checks", "poison", cwd=project
    )
    assert bad.returncode == 1 and "FAIL  poison/NaN: silent non-finite output" in bad.stdout
    assert run_ledger("verify", cwd=project).returncode == 0
    missing = run_ledger("gate", "nothing-here", "--spec", "gate.yaml", cwd=project)
    assert missing.returncode == 2 and missing.stderr.startswith("ledger: error: ")


TRAIN = """
import sys, torch, gate_models as g
from ledger.torch import watch
torch.manual_seed(0)
m = g.MLP()
opt = torch.optim.SGD(m.parameters(), lr=float(sys.argv[1]))
w = watch(m, opt)
x, y = g._vectors(8)
for _ in range(5):
    loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    w.step(loss)
    opt.step()
    opt.zero_grad()
"""


def test_stability_reads_a_recorded_runs_watch_metrics(project: Path) -> None:
    (project / "train_watch.py").write_text(TRAIN)
    for name, lr in (("calm", "0.01"), ("wild", "1000")):
        r = run_ledger("record", "-n", name, "--", "python", "train_watch.py", lr, cwd=project)
        assert r.returncode == 0, r.stderr
    calm = run_ledger(
        "check", "gate_models:mlp_spec", "--levels", "stability", "--run", "calm", cwd=project
    )
    assert calm.returncode == 0, calm.stdout + calm.stderr
    assert "pass  stability/recorded run: run " in calm.stdout and "5 watched steps" in calm.stdout
    wild = run_ledger(
        "check", "gate_models:mlp_spec", "--levels", "stability", "--run", "wild", cwd=project
    )
    assert wild.returncode == 1
    assert "FAIL  stability/recorded run" in wild.stdout
    assert re.search(r"first bad step \d+: update ratio [\d.]+ > 0.1", wild.stdout), wild.stdout
