"""The GPUs in the fingerprint come from ``nvidia-smi``, asked as ``ledger record`` starts
(ledger/capture/gpus.py): one question per record, its answer in the run's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, init_ledger, run_ledger

# A stand-in for nvidia-smi: counts its calls, takes its time, answers like the real one.
FAKE = """#!/bin/sh
echo x >> "{calls}"
sleep {pause}
echo "NVIDIA H200, 550.54.15, 143771 MiB"
"""

PROBE = """
import json
from ledger.store import Store
from ledger.run.find import load_run
from ledger.records.base import record_from_json
from ledger.records.contract import Contract
from ledger.records.env import Environment
store = Store.open(None)
_, run = load_run(store, "gpu")
contract = record_from_json(store.get_json(run.contract), Contract)
env = record_from_json(store.get_json(contract.environment), Environment)
print(json.dumps([g.model_dump(mode="json") for g in env.determinism.gpus]))
"""


def _fake_smi(tmp_path: Path, pause: float) -> tuple[Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE.format(calls=calls, pause=pause))
    smi.chmod(0o755)
    return bin_dir, calls


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    init_ledger(root)
    return root


def test_record_asks_nvidia_smi_once_and_keeps_its_answer(project: Path, tmp_path: Path) -> None:
    bin_dir, calls = _fake_smi(tmp_path, 0.2)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    argv = ("record", "-n", "gpu", "--", sys.executable, "-c", "pass")
    r = run_ledger(*argv, cwd=project, PATH=path)
    assert r.returncode == 0, r.stderr
    assert calls.read_text().count("x") == 1
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"name": "NVIDIA H200"' in out and '"driver_version": "550.54.15"' in out, out


def test_prefetched_answer_is_taken_once_then_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.capture import gpus

    bin_dir, calls = _fake_smi(tmp_path, 0.3)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    gpus.prefetch()
    gpus.prefetch()  # pending: not asked twice
    assert gpus.answer() == "NVIDIA H200, 550.54.15, 143771 MiB\n"
    assert calls.read_text().count("x") == 1  # the prefetched answer: not asked again
    assert gpus.answer() is not None  # taken: asked again, synchronously
    assert calls.read_text().count("x") == 2


def test_no_nvidia_smi_no_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger.capture import gpus

    monkeypatch.setenv("PATH", str(tmp_path))
    gpus.prefetch()
    assert gpus.answer() is None
