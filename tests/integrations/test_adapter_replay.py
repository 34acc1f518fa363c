"""Runs of the adapters replay (issue #32, point 9): the how-tos' set-ups, recorded and replayed
as a user does, come back REPRODUCED (bitwise) although a checkpoint holds the working tree's
absolute path (Lightning's ``best_model_path``) and the Trainer logs its wall-clock timings; a
control with one changed weight does not. A resumed run whose checkpoint pointer lies in an
ignored folder replays too: the pointer is rebuilt from the ledger."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, require_component, run_ledger

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

HERE = Path(__file__).parent
ENV = {"OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def _project(tmp_path: Path, program: str, ignored: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(HERE / program, root / "train.py")
    (root / ".gitignore").write_text(f".ledger/\n{ignored}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        _git(root, *args)
    init_ledger(root)
    return root


def _record(root: Path, name: str, *args: str, **env: str) -> str:
    r = run_ledger(
        "record", "--name", name, "--json", "--", sys.executable, "train.py", *args,
        cwd=root, **ENV, **env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _replay(root: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=root, **ENV, **env)
    assert "{\n" in r.stdout, r.stderr[-3000:]
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


def _require_lightning() -> None:
    require_component(
        importlib.util.find_spec("lightning"), "Lightning", "pip install 'ledger-repro[lightning]'"
    )


@pytest.fixture
def lightning_project(tmp_path: Path) -> Path:
    _require_lightning()
    return _project(tmp_path, "howto_lightning.py", "ckpt*/\nlightning_logs/")


@pytest.fixture(scope="module")
def _lit_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The how-to's run as written, recorded once for the tests that start from it."""
    _require_lightning()
    root = _project(tmp_path_factory.mktemp("lit"), "howto_lightning.py", "ckpt*/\nlightning_logs/")
    return root, _record(root, "lit")


@pytest.fixture
def lit(_lit_once: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A copy of that project (git repository, ledger, ``ckpt/``) and the run's id: each test
    replays and records in its own copy, and the one Lightning run saves a process (~6 s of
    CPU) per test after the first."""
    root = tmp_path / "proj"
    shutil.copytree(_lit_once[0], root, symlinks=True)
    return root, _lit_once[1]


@pytest.fixture
def hf_project(tmp_path: Path) -> Path:
    require_component(
        importlib.util.find_spec("transformers"), "transformers", "pip install 'ledger-repro[hf]'"
    )
    return _project(tmp_path, "howto_hf.py", "out/")


def test_lightning_run_replays_bitwise(lit: tuple[Path, str]) -> None:
    """Each ledger checkpoint's callback state holds ``best_model_path`` under the working
    tree; the replay's names the workspace. Mapped, they are the same file: REPRODUCED."""
    root, run_id = lit
    pointer = json.loads((root / "ckpt" / "epoch=1-step=8.ckpt").read_text())
    assert pointer["run_id"] == run_id

    code, verdict = _replay(root, run_id)
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict["summary"]
    assert verdict["mode"] == "bitwise" and verdict["settings"]["compared"]["files"] == 2
    rows = {f["path"]: f for f in verdict["files"]}
    assert rows["checkpoint step 8"]["status"] == "identical"
    assert any("equal once mapped" in n for n in rows["checkpoint step 8"]["notes"])

    # The control: one initial weight changed; the same comparison sees it.
    code, verdict = _replay(root, run_id, PERTURB_WEIGHT="0.001")
    assert (code, verdict["outcome"]) == (1, "not-reproduced")
    assert "first divergence at train_loss step 0" in verdict["summary"]


# heavy: a Lightning recording and its replay (20.3 s of a worker in the last idle run) for two
# checks each made in `make test` already: a path outside the working tree is compared as
# written, each value once (tests/replay/test_replay_volatile.py::
# test_a_path_outside_the_tree_is_compared_as_written), and a Lightning callback's repr key
# reads `callbacks["ModelCheckpoint{…}"].best_model_path` with both values
# (tests/replay/test_compare_volatile_checks.py::
# test_a_repr_key_is_shortened_where_a_person_reads_it);
# a real Lightning checkpoint's callback state is compared in test_lightning_run_replays_bitwise.
@pytest.mark.heavy
def test_lightning_path_outside_the_tree_is_compared_and_read_plainly(
    lightning_project: Path, tmp_path: Path
) -> None:
    """Only the working tree maps: checkpoints written elsewhere that really moved differ, and
    the summary names the value by a readable key path with both values, not a dict repr."""
    root = lightning_project
    run_id = _record(root, "lit", CKPT_DIR=str(tmp_path / "first"))
    code, verdict = _replay(root, run_id, CKPT_DIR=str(tmp_path / "second"))
    assert (code, verdict["outcome"]) == (1, "not-reproduced")
    summary = verdict["summary"]
    assert 'state.callbacks["ModelCheckpoint{…}"].best_model_path: ' in summary, summary
    assert "'monitor'" not in summary and "{'" not in summary
    assert str(tmp_path / "first") in summary and str(tmp_path / "second") in summary
    assert summary.count(str(tmp_path / "first")) == 1  # each value once


def test_resumed_lightning_run_replays_from_an_ignored_pointer(lit: tuple[Path, str]) -> None:
    """The run resumed from ``ckpt/epoch=0-step=4.ckpt``, a pointer in an ignored folder that
    the workspace does not hold: the replay rebuilds it from the ledger and resumes the same
    way (it crashed with FileNotFoundError)."""
    root, _ = lit  # the first run, which saved the pointer
    # Its own folder: in "ckpt" Lightning would name the next file epoch=1-step=8-v1.ckpt,
    # since the first run left one of that name (a workspace starts without it).
    resumed = _record(root, "resumed", "ckpt/epoch=0-step=4.ckpt", CKPT_DIR="ckpt-resumed")
    code, verdict = _replay(root, resumed, CKPT_DIR="ckpt-resumed")
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict["summary"]
    assert any("ckpt/epoch=0-step=4.ckpt" in n and "rebuilt" in n for n in verdict["notes"])
    assert verdict["settings"]["compared"]["metric_values"] > 0


def test_hf_trainer_run_replays_bitwise_and_in_tolerance(hf_project: Path) -> None:
    """The Trainer logs train_runtime, train_samples_per_second and train_steps_per_second:
    timings, reported beside the verdict and not compared, in either mode."""
    root = hf_project
    run_id = _record(root, "hf")
    code, verdict = _replay(root, run_id)
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict["summary"]
    timing = ["train_runtime", "train_samples_per_second", "train_steps_per_second"]
    assert verdict["settings"]["not_compared"] == dict.fromkeys(timing, "timing")
    assert verdict["summary"].endswith("; not compared: " + ", ".join(timing) + " (timing)")
    assert verdict["settings"]["compared"]["files"] == 2  # the two checkpoints
    assert all(f["status"] == "identical" for f in verdict["files"])

    code, verdict = _replay(root, run_id, "--mode", "tolerance")
    assert (code, verdict["outcome"]) == (0, "reproduced"), verdict["summary"]

    code, verdict = _replay(root, run_id, PERTURB_WEIGHT="0.001")
    assert (code, verdict["outcome"]) == (1, "not-reproduced")
    assert "first divergence at grad_norm step 1" in verdict["summary"], verdict["summary"]
