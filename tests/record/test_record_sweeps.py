"""Hydra multirun under `ledger record`: real Hydra apps, one run per job grouped under the
sweep run, each job replayable alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _hang import HANG_ENV, communicate_or_explain
from _support import init_ledger, require_component, run_ledger, subprocess_env

from ledger.records.base import record_from_json
from ledger.records.config import ConfigCapture
from ledger.records.contract import Contract
from ledger.run.find import load_run
from ledger.run.series import final_value
from ledger.store import Store

try:
    import hydra
except ImportError:  # pragma: no cover - the dev extra
    hydra = None

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# Each job prints its own metric, logs one in-process metric, writes a file in its output dir;
# lr=0.5 fails. The job number is printed only from the output dir (a RUN has no job.num).
APP = """
import os, sys, time
import hydra
import ledger
from omegaconf import DictConfig

_wall = time.time
if os.environ.get("CLOCK") == "late":
    # Every wall-clock read returns 50 ms late: the process preempted right after reading it.
    def _late():
        t = _wall()
        time.sleep(0.05)
        return t
    time.time = _late

@hydra.main(version_base=None, config_path=".", config_name="conf")
def main(cfg: DictConfig) -> None:
    print(f"job in {os.path.basename(os.getcwd())} lr {cfg.lr} depth {cfg.depth}", flush=True)
    ledger.log(step=0, val=cfg.lr * 10)
    if os.environ.get("CLOCK") == "step" and cfg.lr == 0.1:
        time.time = lambda: _wall() - 3600.0  # the wall clock set back an hour (NTP step)
    if os.environ.get("PAUSE") and cfg.lr == 0.2:
        print("ready", flush=True)
        time.sleep(600)
    if cfg.lr == 0.5:
        raise ValueError("lr 0.5 diverges")
    with open("result.txt", "w") as f:
        f.write(f"lr={cfg.lr} depth={cfg.depth}\\n")
    print(f"epoch 0 acc {cfg.lr + cfg.depth}", flush=True)

if __name__ == "__main__":
    main()
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    require_component(hydra, "hydra-core", "pip install 'ledger[dev]'")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "conf.yaml").write_text("lr: 0.1\ndepth: 2\nhydra:\n  job:\n    chdir: true\n")
    (root / ".gitignore").write_text(".ledger/\nsweep/\noutputs/\nmultirun/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def _record(repo: Path, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    r = run_ledger(
        "record",
        "--metric",
        METRIC,
        "--json",
        "--",
        sys.executable,
        "app.py",
        *args,
        cwd=repo,
        **env,
    )
    return r.returncode, json.loads(r.stderr.strip().splitlines()[-1])


def _jobs(repo: Path, sweep_id: str) -> list[dict[str, Any]]:
    rows = json.loads(run_ledger("ls", "--json", "--tag", f"sweep={sweep_id}", cwd=repo).stdout)
    return sorted(rows, key=lambda r: int(r["tags"]["sweep.job"]))


def test_a_multirun_gives_one_run_per_job_under_the_sweep(repo: Path) -> None:
    code, summary = _record(repo, "-m", "lr=0.1,0.5,0.01", "depth=3", "hydra.sweep.dir=sweep")
    assert code == 1  # Hydra exits 1 when a job failed; the sweep run says so
    sweep_id = summary["run_id"]
    assert summary["sweep_jobs"] and len(summary["sweep_jobs"]) == 3
    store = Store.open(repo / ".ledger")
    _, sweep = load_run(store, sweep_id)
    assert sweep.status == "failed" and "sweep" not in sweep.tags
    rows = _jobs(repo, sweep_id)
    assert [r["tags"]["sweep.job"] for r in rows] == ["0", "1", "2"]
    assert [r["status"] for r in rows] == ["succeeded", "failed", "succeeded"]
    assert [r["run_id"] for r in rows] == summary["sweep_jobs"]
    # `ledger ls` lists the sweep and its jobs.
    listed = {r["run_id"] for r in json.loads(run_ledger("ls", "--json", cwd=repo).stdout)}
    assert {sweep_id, *summary["sweep_jobs"]} <= listed
    for row, lr in zip(rows, (0.1, 0.5, 0.01), strict=True):
        _, job = load_run(store, row["run_id"])
        contract = record_from_json(store.get_json(job.contract), Contract)
        assert isinstance(contract, Contract)
        n = row["tags"]["sweep.job"]
        # The job's command alone: no -m, its own overrides, its output dir.
        assert contract.argv[1:] == [
            "app.py", "hydra.sweep.dir=sweep", f"lr={lr}", "depth=3", f"hydra.run.dir=sweep/{n}",
        ]  # fmt: skip
        config = record_from_json(store.get_json(job.resolved_config), ConfigCapture)
        assert isinstance(config, ConfigCapture)
        assert config.resolved["lr"] == lr and config.resolved["depth"] == 3
        assert [h.overrides for h in config.hydra] == [[f"lr={lr}", "depth=3"]]
        stdout = store.objects.get_bytes(job.stdout).decode()  # type: ignore[arg-type]
        assert f"lr {lr} depth 3" in stdout and stdout.count("lr ") == 1  # its own output only
        # In-process metric logged during this job, and no other.
        val = [m for m in job.metrics if m.name == "val"]
        assert len(val) == 1 and val[0].count == 1 and val[0].last == pytest.approx(lr * 10)
        if row["status"] == "succeeded":
            assert final_value(job, "acc") == pytest.approx(lr + 3)
            # What the job wrote in its output dir (Hydra's job log too), .hydra/ excepted.
            paths = [o.path for o in job.outputs]
            assert paths == [f"sweep/{n}/app.log", f"sweep/{n}/result.txt"]
            assert all(o.files == 1 for o in job.outputs)
        else:
            assert final_value(job, "acc") is None and job.exit_code == 1
            assert any("ValueError: lr 0.5 diverges" in note for note in job.notes)
    assert run_ledger("verify", cwd=repo).returncode == 0
    # The objects are the truth: a rebuilt index lists the same jobs.
    assert run_ledger("reindex", cwd=repo).returncode == 0
    assert [r["run_id"] for r in _jobs(repo, sweep_id)] == summary["sweep_jobs"]


@pytest.mark.parametrize("clock", ["late", "step"])
def test_each_job_keeps_its_in_process_points_whatever_the_wall_clock_does(
    repo: Path, clock: str
) -> None:
    # A job's in-process points are found by time. "late": the process is held up between
    # reading the wall clock and the monotonic one when its run attaches (a loaded machine), so
    # a wall time computed from the two is 50 ms early, before the next job's start: a job's
    # point logged as it began was lost. "step": the wall clock is set back an hour during the
    # first job, so every later bound the hook noted is an hour behind the points.
    code, summary = _record(repo, "-m", "lr=0.1,0.5,0.01", "hydra.sweep.dir=sweep", CLOCK=clock)
    assert code == 1
    store = Store.open(repo / ".ledger")
    for row, lr in zip(_jobs(repo, summary["run_id"]), (0.1, 0.5, 0.01), strict=True):
        _, job = load_run(store, row["run_id"])
        val = [m for m in job.metrics if m.name == "val"]
        assert len(val) == 1 and val[0].count == 1 and val[0].last == pytest.approx(lr * 10), (
            row["tags"]["sweep.job"],
            val,
        )


def test_a_job_run_replays_only_its_own_overrides(repo: Path) -> None:
    code, summary = _record(repo, "-m", "lr=0.1,0.01", "hydra.sweep.dir=sweep")
    assert code == 0
    second = summary["sweep_jobs"][1]
    r = run_ledger("replay", second, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["outcome"] == "reproduced"
    store = Store.open(repo / ".ledger")
    _, again = load_run(store, verdict["replays"][0])
    contract = record_from_json(store.get_json(again.contract), Contract)
    assert isinstance(contract, Contract)
    assert "-m" not in contract.argv and "lr=0.01" in contract.argv
    assert final_value(again, "acc") == pytest.approx(2.01)
    # The replay ran one job, not the sweep: a replay makes no job runs of its own.
    assert again.tags.get("sweep") == summary["run_id"]
    assert len(_jobs(repo, summary["run_id"])) == 2


def test_a_single_hydra_run_makes_no_job_runs(repo: Path) -> None:
    code, summary = _record(repo, "lr=0.3", "hydra.run.dir=single")
    assert code == 0 and summary.get("sweep_jobs", []) == []
    assert _jobs(repo, summary["run_id"]) == []


def test_ctrl_c_in_the_middle_of_a_sweep(repo: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "ledger", "record", "--metric", METRIC, "--json", "--",
            sys.executable, "app.py", "-m", "lr=0.1,0.2,0.3", "hydra.sweep.dir=sweep",
        ],
        cwd=repo,
        env=subprocess_env(PAUSE="1", **HANG_ENV),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:  # job 1 waits in its sleep
        if line == b"ready\n":
            break
    os.killpg(proc.pid, signal.SIGINT)
    _, err = communicate_or_explain(proc, 120, "ledger record of a Hydra sweep")
    assert proc.returncode == 130, err
    summary = json.loads(err.decode().strip().splitlines()[-1])
    assert summary["status"] == "interrupted"
    rows = _jobs(repo, summary["run_id"])
    # Job 0 ran to its end, job 1 was stopped, job 2 never started.
    assert [(r["tags"]["sweep.job"], r["status"]) for r in rows] == [
        ("0", "succeeded"),
        ("1", "interrupted"),
    ]
    assert run_ledger("verify", cwd=repo).returncode == 0


def test_clock_frames_take_each_process_s_first_whole_header_and_skip_the_rest(
    tmp_path: Path,
) -> None:
    from ledger.run.sweeps import _clock_frames

    metrics = tmp_path / "metrics"
    metrics.mkdir()
    lines = [
        {"header": {"pid": 7, "wall_start": 1000.5, "mono_start": 20.25}},
        {"t": 0.1, "s": 0, "v": {"x": 1.0}},
        {"header": {"pid": 7, "wall_start": 2000.0, "mono_start": 30.0}},  # a later run: first kept
        {"header": {"pid": 8, "wall_start": 1000.0}},  # no monotonic reading: an older writer
        {"header": {"pid": 9, "wall_start": True, "mono_start": 1.0}},  # a bool is no time
        {"header": {"pid": "10", "wall_start": 1.0, "mono_start": 1.0}},  # nor a str a pid
        {"header": ["not", "an", "object"]},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + '\n{"header": {"pid": 11, torn\n'
    (metrics / "rank-0.jsonl").write_text(text)
    (metrics / "rank-1.jsonl").write_text(
        json.dumps({"header": {"pid": 12, "wall_start": 5, "mono_start": 6.5}}) + "\n"
    )
    os.mkfifo(metrics / "rank-2.jsonl")  # a FIFO in the staging dir is not read (no hang)
    assert _clock_frames(tmp_path) == {7: (1000.5, 20.25), 12: (5.0, 6.5)}
    assert _clock_frames(tmp_path / "absent") == {}
