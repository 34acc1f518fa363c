"""`ledger replay` end to end on real scripts in a real git repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, init_ledger, run_ledger

from ledger.store import Store

METRIC = r"epoch (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)"

NOISY = """
import os, random, sys
noise = float(os.environ.get("NOISE", "0"))
rng = random.Random()  # deliberately unseeded: replays differ
loss = 1.0
for step in range(6):
    loss *= 0.8
    # the noise starts at step 3, so that is where a replay first diverges
    value = loss + (rng.random() * noise if step >= 3 else 0.0)
    print(f"epoch {step} loss {value!r} acc 0.5", flush=True)
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
"""

SEEDED = """
import argparse, random
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
r = random.Random(a.seed)
print(f"epoch 0 loss {1 + r.gauss(0, 0.1)!r} acc {0.9 + r.gauss(0, 0.01)!r}")
"""


def _env() -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(REPO / "examples" / "tiny" / "train.py", root / "train.py")
    shutil.copy(REPO / "examples" / "tiny" / "data.csv", root / "data.csv")
    (root / "noisy.py").write_text(NOISY)
    (root / "seeded.py").write_text(SEEDED)
    (root / ".gitignore").write_text("out/\n.ledger/\n")
    env = {**os.environ, **_env()}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    # A dirty tree and an untracked helper module: replay must rebuild both exactly.
    (root / "noisy.py").write_text(NOISY.replace("loss = 1.0", "from helper import START as loss"))
    (root / "helper.py").write_text("START = 1.0\n")
    init_ledger(root)
    return root


def _record(repo: Path, *args: str, **env: str) -> str:
    r = run_ledger("record", "--metric", METRIC, "--json", *args, cwd=repo, **env)
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(repo: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, object]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=repo, **env)
    start = r.stdout.index("{\n")
    return r.returncode, json.loads(r.stdout[start:])


@pytest.mark.slow
@pytest.mark.torch
def test_deterministic_torch_script_replays_bitwise(repo: Path) -> None:
    run_id = _record(
        repo,
        "--input",
        "data.csv",
        "--output",
        "out",
        "--",
        sys.executable,
        "train.py",
        "--epochs",
        "3",
    )
    code, verdict = _replay(repo, run_id)
    assert code == 0, verdict
    assert verdict["outcome"] == "reproduced" and verdict["mode"] == "bitwise"
    files = verdict["files"]
    assert isinstance(files, list) and files[0]["status"] == "identical"  # model.pt by tensor
    assert (repo / "train.py").read_text() == (REPO / "examples/tiny/train.py").read_text()


def test_injected_noise_fails_bitwise_passes_tolerance(repo: Path) -> None:
    run_id = _record(repo, "--", sys.executable, "noisy.py", NOISE="1e-12")
    code, verdict = _replay(repo, run_id, NOISE="1e-12")
    assert code == 1 and verdict["outcome"] == "not-reproduced"
    first = verdict["metrics"]["first_divergence"]  # type: ignore[index]
    assert first["metric"] == "loss" and first["step"] == 3
    code, verdict = _replay(repo, run_id, "--mode", "tolerance", "--rtol", "1e-6", "--atol", "0")
    assert code == 0 and verdict["outcome"] == "reproduced"
    code, verdict = _replay(repo, run_id, "--mode", "tolerance", "--tol", "loss=0,1e-15")
    assert code == 1 and "step 3" in str(verdict["summary"])
    # Every verdict is listed with the original run, newest last.
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=repo).stdout)
    assert [v["outcome"] for v in shown["verdicts"]] == [
        "not-reproduced",
        "reproduced",
        "not-reproduced",
    ]
    assert [v["mode"] for v in shown["verdicts"]] == ["bitwise", "tolerance", "tolerance"]
    text = run_ledger("show", run_id, cwd=repo).stdout
    assert "verdict   bitwise of this run: not-reproduced" in text


def test_failed_run_replays_its_failure(repo: Path) -> None:
    run_id = _record(repo, "--", sys.executable, "noisy.py", EXIT_CODE="4")
    code, verdict = _replay(repo, run_id, EXIT_CODE="4")
    assert code == 0 and verdict["outcome"] == "reproduced"
    assert verdict["exit_status"] == {
        "original": ["failed", 4, None],
        "replay": ["failed", 4, None],
    }


def test_seeds_mode_matches_a_hand_computation(repo: Path) -> None:
    from scipy import stats as st

    run_id = _record(repo, "--", sys.executable, "seeded.py", "--seed", "1")
    code, verdict = _replay(
        repo,
        run_id,
        "--mode",
        "seeds",
        "--seeds",
        "4",
        "--metric",
        "acc",
        "--seed-arg=--seed",
        "--jobs",
        "2",
    )
    seeds = verdict["seeds"]
    assert isinstance(seeds, dict) and seeds["single_run"] is not None
    store = Store.open(repo / ".ledger")
    from ledger.run.find import load_run
    from ledger.run.series import final_value

    values = [final_value(load_run(store, r)[1], "acc") for r in verdict["replays"]]  # type: ignore[union-attr]
    original = final_value(load_run(store, run_id)[1], "acc")
    n = len(values)
    mean = sum(values) / n  # type: ignore[arg-type]
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5  # type: ignore[operator]
    half = st.t.ppf(0.975, n - 1) * sd * (1 + 1 / n) ** 0.5
    lo, hi = seeds["single_run"]["prediction_interval"]
    assert lo == pytest.approx(mean - half) and hi == pytest.approx(mean + half)
    inside = mean - half <= original <= mean + half  # type: ignore[operator]
    # One original and 4 replays: its rank can never be significant (2/5 at best), so an
    # original outside the interval is inconclusive, never not reproduced.
    below = sum(v < original for v in values)  # type: ignore[operator]
    rank = seeds["single_run"]["rank"]
    assert rank["n"] == 5 and rank["below"] == below and rank["significant"] is False
    assert verdict["outcome"] == ("reproduced" if inside else "inconclusive")
    assert code == (0 if inside else 1)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["nope"], 2, "no run 'nope'"),
        (["RUN", "--rtol", "-1"], 2, "0 or more"),
        (["RUN", "--mode", "fuzzy"], 2, "is not one of"),
        (["RUN", "--tol", "loss=abc"], 2, "METRIC=RTOL,ATOL"),
        (["RUN", "--workspace-dir", "noisy.py"], 7, "cannot create a replay workspace"),
        (["RUN", "--from-checkpoint", "3"], 2, "matches 0 checkpoint(s)"),
    ],
)
def test_bad_replay_input(repo: Path, args: list[str], code: int, message: str) -> None:
    run_id = _record(repo, "--", sys.executable, "noisy.py")
    before = sorted((repo / ".ledger" / "refs").rglob("*"))
    r = run_ledger("replay", *[run_id if a == "RUN" else a for a in args], cwd=repo)
    assert r.returncode == code and message in r.stderr, r.stderr
    assert sorted((repo / ".ledger" / "refs").rglob("*")) == before


def test_replay_after_gc_deleted_inputs_says_what_is_missing(repo: Path) -> None:
    run_id = _record(repo, "--input", "data.csv", "--", sys.executable, "noisy.py")
    store = Store.open(repo / ".ledger")
    from ledger._hashing import hash_file

    store.objects.delete(hash_file(repo / "data.csv"))
    r = run_ledger("replay", run_id, cwd=repo)
    assert r.returncode == 7 and "cannot restore input data.csv" in r.stderr


def test_diff_between_two_runs(repo: Path) -> None:
    a = _record(repo, "--", sys.executable, "noisy.py", NOISE="0")
    b = _record(repo, "--", sys.executable, "noisy.py", NOISE="1e-3")
    r = run_ledger("diff", a, b, "--json", cwd=repo)
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["code"]["same"]
    assert d["metrics"]["first_divergence"]["step"] == 3


TB_SCRIPT = """
import os, torch
from torch.utils.tensorboard import SummaryWriter
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 3), torch.randn(32, 1)
writer = SummaryWriter(log_dir="out/tb")  # event file names hold time, host and pid
for step in range(5):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    writer.add_scalar("train/loss", loss.item(), step)
writer.close()
torch.save(model.state_dict(), "out/model.pt")  # the archive embeds its file name
"""


@pytest.mark.slow
@pytest.mark.torch
def test_torch_save_and_tensorboard_script_replays_bitwise(repo: Path) -> None:
    (repo / "tb.py").write_text(TB_SCRIPT)
    run_id = _record(repo, "--output", "out", "--", sys.executable, "tb.py")
    store = Store.open(repo / ".ledger")
    from ledger.run.find import load_run

    _, run = load_run(store, run_id)
    assert any(m.source == "tensorboard" and m.name == "train/loss" for m in run.metrics)
    code, verdict = _replay(repo, run_id)
    assert code == 0, verdict["summary"]
    statuses = {f["comparator"]: f["status"] for f in verdict["files"]}  # type: ignore[union-attr]
    assert statuses.get("tensors") == "identical" and statuses.get("tensorboard") == "identical"


DET_SCRIPT = """
import os
import ledger.torch
ledger.torch.deterministic(warn_only=bool(os.environ.get("WARN_ONLY")))
print("epoch 0 loss 1.0 acc 0.5")
"""


@pytest.mark.torch
def test_replay_warns_when_determinism_settings_differ(repo: Path) -> None:
    (repo / "det.py").write_text(DET_SCRIPT)
    run_id = _record(repo, "--", sys.executable, "det.py", WARN_ONLY="1")
    code, verdict = _replay(repo, run_id)  # WARN_ONLY was not recorded: it is unset now
    assert "different-determinism-settings" in verdict["labels"]  # type: ignore[operator]
    assert any("warn_only" in n for n in verdict["notes"])  # type: ignore[union-attr]
    assert code == 0  # the metrics still match; the label says the settings did not
