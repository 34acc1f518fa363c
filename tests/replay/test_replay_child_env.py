"""A caller's ``extra_env`` never names a variable replay sets for the replayed program itself
(``replay/child_env.py``): the verdict is stated for ledger's value (the resume point, the seed
root, the replay's own run, a seed's GPUs), so such an ``extra_env`` is refused before any
work, naming the variable and what to use instead."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.errors import UsageError
from ledger.replay.options import ExecutorOptions, ReplayOptions

# Written out, not read from the constant: a name dropped from it must fail here.
RESERVED = {
    "LEDGER_DIR": "--ledger",
    "LEDGER_RUN_ID": "the replay's own run",
    "LEDGER_RUN_DIR": "the replay's own run",
    "LEDGER_HOOK_DIR": "the replay's own run",
    "LEDGER_SEED_ROOT": "--mode seeds with --seed-values",
    "LEDGER_RESUME_FROM": "--from-checkpoint",
    "LEDGER_LOCALIZE_STEPS": "--localize",
    "LEDGER_LOCALIZE_DETERMINISTIC": "--localize",
}

# acc is how long the values of the variables ledger controls for it are: 0 under a plain
# record (none is set), and so under its replay.
LEFT_TO_LEDGER = ("LEDGER_SEED_ROOT", "LEDGER_RESUME_FROM", "LEDGER_LOCALIZE_STEPS",
                  "LEDGER_LOCALIZE_DETERMINISTIC")  # fmt: skip
SCRIPT = f"""
import os
print("epoch 0 acc", float(sum(len(os.environ.get(n, "")) for n in {LEFT_TO_LEDGER!r})))
"""


@pytest.mark.parametrize("name", sorted(RESERVED))
def test_extra_env_naming_a_variable_replay_sets_is_refused(name: str) -> None:
    opts = ReplayOptions(extra_env={"MY_FLAG": "1", name: "x"})
    with pytest.raises(UsageError) as e:
        opts.validate()
    assert e.value.exit_code == 2
    assert e.value.message.startswith(f"extra_env names {name}, which replay sets ")
    assert e.value.hint is not None and RESERVED[name] in e.value.hint


def test_the_gpus_are_the_callers_unless_replay_hands_them_out() -> None:
    ReplayOptions(extra_env={"CUDA_VISIBLE_DEVICES": "1", "MY_FLAG": "1"}).validate()
    for ex in (
        ExecutorOptions(name="local", gpus_per_job=1, devices=(0, 1)),
        ExecutorOptions(name="submitit-local"),
    ):
        opts = ReplayOptions(mode="seeds", executor=ex, extra_env={"CUDA_VISIBLE_DEVICES": "1"})
        with pytest.raises(UsageError, match="extra_env names CUDA_VISIBLE_DEVICES") as e:
            opts.validate()
        assert e.value.hint is not None and "--devices" in e.value.hint


def test_the_reserved_names_cover_every_ledger_variable_a_recorded_run_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ledger/run/record.py`` sets the run's own variables; each LEDGER_* one it sets is in
    CONTROLLED_ENV, so a new one there is refused in extra_env too (or this fails)."""
    from ledger.replay.child_env import CONTROLLED_ENV
    from ledger.run.options import RecordOptions
    from ledger.run.record import _child_env
    from ledger.store import Store

    for name in list(os.environ):
        if name.startswith("LEDGER_"):
            monkeypatch.delenv(name)
    store = Store.init(tmp_path / ".ledger")
    opts = RecordOptions(command=["true"], cwd=tmp_path, seed_root=5)
    env = _child_env(opts, store, "r" * 26, tmp_path / "staging")
    set_by_record = {k for k in env if k.startswith("LEDGER_")}
    assert {"LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "LEDGER_SEED_ROOT"} <= set_by_record
    assert set_by_record <= set(CONTROLLED_ENV), set_by_record - set(CONTROLLED_ENV)


def test_ledger_sets_only_names_the_check_refuses() -> None:
    from ledger.replay.child_env import child_env

    env = child_env({"A": "1", "B": "1"}, {"B": "2"}, {"LEDGER_RESUME_FROM": "b3:x"})
    assert env == {"A": "1", "B": "2", "LEDGER_RESUME_FROM": "b3:x"}
    with pytest.raises(ValueError, match="not a replay-controlled variable: MY_SWITCH"):
        child_env({}, {}, {"MY_SWITCH": "1"})


def test_variables_ledger_controls_are_cleared_from_the_inherited_environment() -> None:
    from ledger.replay.child_env import child_env

    shell = {"LEDGER_SEED_ROOT": "7", "LEDGER_RESUME_FROM": "b3:x", "LEDGER_DIR": "/l", "A": "1"}
    # Not the shell's seed root nor resume point; the recorded value and ledger's own stay;
    # the run's own variables (LEDGER_DIR) ledger record sets anyway.
    assert child_env({}, {}, {}, shell) == {"LEDGER_SEED_ROOT": "", "LEDGER_RESUME_FROM": ""}
    recorded = {"LEDGER_SEED_ROOT": "3"}
    assert child_env(recorded, {}, {"LEDGER_RESUME_FROM": "b3:y"}, shell) == {
        "LEDGER_SEED_ROOT": "3",
        "LEDGER_RESUME_FROM": "b3:y",
    }


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")}


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """(project, run id) of a run of SCRIPT, recorded with none of LEFT_TO_LEDGER set."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "env.py").write_text(SCRIPT)
    init_ledger(root)
    r = run_ledger(
        "record", "--metric", r"epoch (?P<step>\d+) acc (?P<acc>\S+)", "--json", "--",
        sys.executable, "env.py", cwd=root,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return root, str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def test_the_replaying_shells_values_do_not_reach_the_program(
    recorded: tuple[Path, str],
) -> None:
    """Once an exported LEDGER_SEED_ROOT (or resume point, or localize switch) in the shell
    reached the replayed program: not reproduced, a false verdict."""
    root, run_id = recorded
    shell = dict.fromkeys(LEFT_TO_LEDGER, "7")
    r = run_ledger("replay", run_id, "--json", cwd=root, **shell)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == "reproduced", verdict["summary"]


def test_a_replay_given_a_seed_root_in_extra_env_writes_nothing(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    """The old behaviour: the program got the caller's LEDGER_SEED_ROOT, a replay of a run
    recorded without one, and the verdict called it not reproduced (a false verdict)."""
    from ledger.replay.engine import replay
    from ledger.store import Store

    root, run_id = recorded
    store = Store.open(root / ".ledger")
    before = _tree(store.root)
    parent = tmp_path / "workspaces"
    parent.mkdir()
    opts = ReplayOptions(extra_env={"LEDGER_SEED_ROOT": "7"}, workspace_parent=parent)
    with pytest.raises(UsageError, match="extra_env names LEDGER_SEED_ROOT"):
        replay(store, run_id, opts)
    assert _tree(store.root) == before
    assert list(parent.iterdir()) == []
    # Without it the same replay runs and reproduces.
    outcome = replay(store, run_id, ReplayOptions(workspace_parent=parent))
    assert outcome.verdict.outcome == "reproduced", outcome.verdict.summary
