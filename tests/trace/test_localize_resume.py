"""`ledger replay RUN --localize` of a run recorded WITHOUT a trace: two traced passes from
the original's last checkpoint before the first divergence name where they part. The real
recorder, the real replay, a real (small) training program with ledger checkpoints."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

HERE = Path(__file__).parent
COST = "localizing: metrics first diverged at step"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("ck") / "proj"
    root.mkdir()
    shutil.copy(HERE / "train_ckpt.py", root / "train_ckpt.py")
    (root / ".gitignore").write_text(".ledger/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    r = run_ledger("record", "--json", "--", sys.executable, "train_ckpt.py", cwd=root)
    assert r.returncode == 0, r.stderr
    return root, json.loads(r.stderr.strip().splitlines()[-1])["run_id"]


def _localize(root: Path, run_id: str, **env: str) -> tuple[int, dict[str, Any], str]:
    r = run_ledger("replay", run_id, "--localize", "--json", cwd=root, **env)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :]), r.stderr


# heavy: a replay and three passes; tests/test_docs_console.py runs the same replay
# (docs/how-to/localize-divergence.md, `T_UNSEEDED_FROM=5 ledger replay ck --localize`) in
# `make test` and checks its cost line, third-pass line and localized line
@pytest.mark.heavy
def test_an_unseeded_dropout_is_named_from_two_passes(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    code, verdict, err = _localize(root, run_id, T_UNSEEDED_FROM="5")
    assert code == 1 and verdict["outcome"] == "not-reproduced"
    assert verdict["metrics"]["first_divergence"]["step"] == 5
    # The cost is said before the passes start: checkpoints at steps 2, 5, 8; resume at 2.
    cost = err.index(COST)
    assert err.index("--localize pass: stopped after 4 traced step(s)") > cost
    assert (
        "replaying twice from the checkpoint of step 2 with tracing on, 4 step(s) per pass" in err
    )
    loc = verdict["settings"]["localization"]
    assert loc["found"] is True
    # The report names the original's step 5, the passes' own step 2 (they start at step 3).
    assert (loc["step"], loc["phase"], loc["module"], loc["kind"]) == (5, "forward", "2", "Drop")
    assert loc["trace_step"] == 2
    assert loc["resumed"]["checkpoint_step"] == 2 and loc["resumed"]["steps_per_pass"] == 4
    assert len(loc["resumed"]["passes"]) == 2
    assert (
        "localized: step 5 (two traced passes from the checkpoint of step 2): batch identical; "
        "forward of 2 (Drop) differs (inputs identical"
    ) in verdict["summary"]
    # A third pass under torch's deterministic algorithms, said before it runs, raises nothing:
    # the generator seeded from the OS is nothing torch polices.
    third = err.index(
        "localizing: the passes differ in the forward of 2 (Drop) on identical inputs; a third "
        "pass from the checkpoint of step 2 under torch.use_deterministic_algorithms(True), to "
        "name the operation from torch's error: 3 step(s) at most (to step 5)"
    )
    assert err.index("--localize pass: stopped after 3 traced step(s)") > third
    assert loc["cause"] == "unflagged-nondeterminism"
    assert loc["resumed"]["deterministic_pass"]["exit_code"] == 0
    assert loc["line"].endswith(
        "→ something nondeterministic that torch does not flag (a thread pool's order, an "
        "unseeded generator): a third pass under torch.use_deterministic_algorithms(True) ran "
        "clean to step 5, so no operation torch knows to be nondeterministic ran there"
    )
    assert loc["doc"].endswith("#not-flagged-by-torch")


# heavy: a replay and three passes; tests/test_docs_console.py runs the same replay
# (docs/how-to/localize-divergence.md, `T_RACY_FROM=5 ledger replay ck --localize`) in
# `make test` and checks its third-pass line and the localized line naming put_
@pytest.mark.heavy
def test_torch_names_the_operation_in_a_third_pass(recorded: tuple[Path, str]) -> None:
    """put_ onto repeated indices in an order drawn from the OS: the two passes differ in the
    forward of Racy; under torch.use_deterministic_algorithms(True) torch raises on put_."""
    root, run_id = recorded
    code, verdict, err = _localize(root, run_id, T_RACY_FROM="5")
    assert code == 1 and verdict["metrics"]["first_divergence"]["step"] == 5
    assert "under torch.use_deterministic_algorithms(True), to name the operation" in err
    loc = verdict["settings"]["localization"]
    assert (loc["step"], loc["phase"], loc["module"], loc["kind"]) == (5, "forward", "3", "Racy")
    assert loc["cause"] == "nondeterministic-op" and loc["operation"] == "put_"
    third = loc["resumed"]["deterministic_pass"]
    assert third["exit_code"] != 0 and third["step"] == 5 and third["pass_step"] == 2
    assert third["in"] == "the forward of 3 (Racy)"
    assert loc["line"].startswith(
        "step 5 (two traced passes from the checkpoint of step 2): batch identical; forward of "
        "3 (Racy) differs (inputs identical, max |Δ| "
    )
    assert loc["line"].endswith(
        '→ put_ has no deterministic implementation here (torch: "put_ does not have a '
        "deterministic implementation, but you set 'torch.use_deterministic_algorithms(True)'…\"; "
        "raised in the forward of 3 (Racy) at step 5 of a third pass under "
        "torch.use_deterministic_algorithms(True))"
    )
    assert "replace put_ by an operation torch implements deterministically" in loc["suggestion"]


def test_a_replay_that_reproduces_runs_no_pass(recorded: tuple[Path, str]) -> None:
    code, verdict, err = _localize(*recorded)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    assert "localization" not in verdict["settings"] and COST not in err


# heavy: two more traced passes; test_an_unseeded_dropout_is_named_from_two_passes runs the same
# path in `make test`
@pytest.mark.heavy
def test_a_cause_the_passes_share_is_not_blamed_on_an_operation(
    recorded: tuple[Path, str],
) -> None:
    """Both passes run with the replay's halved rate: they agree, so no culprit is named."""
    root, run_id = recorded
    code, verdict, err = _localize(root, run_id, T_LR_FROM="5")
    assert code == 1 and COST in err
    assert verdict["metrics"]["first_divergence"]["step"] == 6  # the loss before the step
    loc = verdict["settings"]["localization"]
    assert loc["found"] is False and loc["comparable"] is True
    assert loc["line"].startswith(
        "two traced passes from the checkpoint of step 5: traces identical in all 2 step(s) "
        "traced in both runs (steps 6 to 7)"  # the original's steps, not the passes' 0 to 1
    )
    assert "the cause is what differs between the recording and this replay" in loc["line"]


def test_no_checkpoint_before_the_divergence_is_a_clear_refusal(
    recorded: tuple[Path, str],
) -> None:
    root, run_id = recorded
    code, verdict, err = _localize(root, run_id, T_UNSEEDED_FROM="1")
    assert code == 1 and COST not in err  # nothing was run
    loc = verdict["settings"]["localization"]
    assert loc["found"] is False and loc["comparable"] is False
    assert "the run saved no checkpoint before step 1" in loc["line"]
    assert "ledger.torch.save_checkpoint" in verdict["summary"]


# heavy: a replay and its two traced passes before the refusal; the other refusal
# (test_no_checkpoint_before_the_divergence_is_a_clear_refusal) stays in `make test`
@pytest.mark.heavy
def test_a_program_that_resumes_by_hand_gets_a_refusal_saying_what_to_add(
    recorded: tuple[Path, str],
) -> None:
    """load_checkpoint without state hands ledger no model: the passes record no trace."""
    root, run_id = recorded
    code, verdict, err = _localize(root, run_id, T_UNSEEDED_FROM="5", T_BY_HAND="1")
    assert code == 1 and COST in err
    loc = verdict["settings"]["localization"]
    assert loc["found"] is False and loc["comparable"] is False
    assert loc["line"].startswith(
        "--localize: the two passes from the checkpoint of step 2 recorded no trace: the "
        "program must resume through ledger.torch.load_checkpoint(ledger.resume_from(), "
        "state={'model': model, 'optimizer': opt, ...})"
    )
    assert len(loc["resumed"]["passes"]) == 2


def test_the_replay_and_the_loader_agree_on_the_variable() -> None:
    from ledger.replay import localize_determinism as replay_side
    from ledger.replay.localize_resume import STEPS_ENV
    from ledger.torch import localize_pass

    assert STEPS_ENV == localize_pass.ENV
    assert replay_side.DETERMINISTIC_ENV == localize_pass.DETERMINISTIC_ENV
    assert replay_side.MARK == localize_pass.MARK


def test_torchs_error_is_read_back_from_a_pass_stderr() -> None:
    """The words torch raises on CUDA (index_add_cuda_), as a traceback prints them."""
    from ledger.replay.localize_determinism import MARK, read_error

    text = (
        f"{MARK} pass step 1, in the forward of blocks.0.mix (ScatterMix)\n"
        "Traceback (most recent call last):\n  ...\n"
        "RuntimeError: index_add_cuda_ does not have a deterministic implementation, but you "
        "set 'torch.use_deterministic_algorithms(True)'. You can turn off determinism ...\n"
    )
    got = read_error(text)
    assert got is not None
    assert got["operation"] == "index_add_cuda_" and got["pass_step"] == 1
    assert got["in"] == "the forward of blocks.0.mix (ScatterMix)"
    assert got["error"].startswith("index_add_cuda_ does not have a deterministic")
    assert read_error("RuntimeError: CUDA out of memory\n") is None
