"""`ledger replay --from-checkpoint` finds the checkpoint the user names (``replay/engine.py``):
by step, by a prefix of its id with or without ``b3:`` (four characters at least), and lists
the ones the run saved when the name matches none. Real torch checkpoints, real replays."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

pytestmark = [pytest.mark.torch]

# Saves steps 1 to 3 (logging the loss at each), and reloads step 2 right after saving it (a
# load event at step 2, which is no save to resume from); a replay resumed from a checkpoint
# continues after its step.
SCRIPT = """
import torch
import ledger
from ledger.torch import load_checkpoint, save_checkpoint

ledger.seed(0)
state = {"model": {"w": torch.randn(8, dtype=torch.float64)}, "epoch": 0}
if ledger.resume_from():
    load_checkpoint(ledger.resume_from(), state=state)
for step in range(state["epoch"] + 1, 4):
    state = {"model": {"w": state["model"]["w"] * 0.5}, "epoch": step}
    save_checkpoint(state, step=step)
    if step == 2 and not ledger.resume_from():
        load_checkpoint(2, state=state)
    print(f"epoch {step} loss {float(state['model']['w'].abs().sum())!r}", flush=True)
    ledger.log(step=step, loss=float(state["model"]["w"].abs().sum()))
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[int, str]]:
    """(project, run id, step -> checkpoint id) of one recorded run, shared by the tests:
    each test only replays it."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("resume") / "proj"
    root.mkdir()
    (root / "ckpt.py").write_text(SCRIPT)
    init_ledger(root)
    r = run_ledger("record", "--json", "--", sys.executable, "ckpt.py", cwd=root)
    assert r.returncode == 0, r.stderr
    run_id = str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=root).stdout)
    events = [(c["event"], c["step"]) for c in shown["run"]["checkpoints"]]
    assert events == [("save", 1), ("save", 2), ("load", 2), ("save", 3)], events
    saved = {
        int(c["step"]): str(c["checkpoint_digest"])
        for c in shown["run"]["checkpoints"]
        if c["event"] == "save"
    }
    assert all(d.startswith("b3:") for d in saved.values())
    return root, run_id, saved


def _unique_prefix(saved: dict[int, str], step: int, length: int) -> str:
    prefix = saved[step][3 : 3 + length]
    others = [d for s, d in saved.items() if s != step]
    assert not any(d[3:].startswith(prefix) for d in others), "ids share a prefix; rerun"
    return prefix


@pytest.mark.parametrize("form", ["b3:", "four", "step"])
def test_a_checkpoint_is_found_by_id_prefix_or_step(
    recorded: tuple[Path, str, dict[int, str]], form: str
) -> None:
    root, run_id, saved = recorded
    text = {
        "b3:": "b3:" + _unique_prefix(saved, 2, 6),
        "four": _unique_prefix(saved, 2, 4),  # the shortest prefix taken
        "step": "2",
    }[form]
    r = run_ledger("replay", run_id, "--from-checkpoint", text, "--json", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == "reproduced", verdict["summary"]
    assert verdict["settings"]["from_checkpoint"] == {"checkpoint": saved[2], "step": 2}
    assert f"resumed from checkpoint {saved[2]} (step 2)" in " ".join(verdict["notes"])
    # The original logged the loss at steps 1 to 3, the continuation at step 3 alone: the
    # points at and before the checkpoint's step are left out of the comparison, not counted
    # missing from the replay (engine.py's `k[1] > resume[1]`; `>=` made it not reproduced).
    assert (verdict["metrics"]["compared"], verdict["metrics"]["total_keys"]) == (1, 1)


@pytest.mark.parametrize("text", ["9", "abc"])  # no such step; a prefix too short to use
def test_a_name_that_matches_no_checkpoint_lists_those_saved(
    recorded: tuple[Path, str, dict[int, str]], text: str
) -> None:
    root, run_id, saved = recorded
    r = run_ledger("replay", run_id, "--from-checkpoint", text, cwd=root)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"--from-checkpoint {text!r} matches 0 checkpoint(s) of run {run_id}" in r.stderr
    listed = ", ".join(f"step {s} {saved[s][:15]}" for s in (1, 2, 3))
    assert f"ledger: hint: give a step or id prefix of one it saved: {listed}\n" in r.stderr


def test_seeds_mode_takes_no_checkpoint(recorded: tuple[Path, str, dict[int, str]]) -> None:
    root, run_id, _ = recorded
    r = run_ledger("replay", run_id, "--mode", "seeds", "--from-checkpoint", "2", cwd=root)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--from-checkpoint checks one continuation: use bitwise or tolerance" in r.stderr


def test_a_callers_extra_env_cannot_name_the_resume_point(
    recorded: tuple[Path, str, dict[int, str]],
) -> None:
    """A Python caller's ``extra_env`` naming ``LEDGER_RESUME_FROM`` is refused before any
    work: the verdict says which checkpoint the program resumed from, and that is
    ``from_checkpoint``'s (replay/child_env.py). Once it silently lost to ``from_checkpoint``;
    before that it moved the resume and the verdict said not reproduced."""
    from ledger.errors import UsageError
    from ledger.replay.engine import replay
    from ledger.replay.options import ReplayOptions
    from ledger.store import Store

    root, run_id, saved = recorded
    store = Store.open(root / ".ledger")
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*"))
    opts = ReplayOptions(from_checkpoint="2", extra_env={"LEDGER_RESUME_FROM": saved[1]})
    with pytest.raises(UsageError, match="extra_env names LEDGER_RESUME_FROM") as e:
        replay(store, run_id, opts)
    assert e.value.hint is not None and "--from-checkpoint" in e.value.hint
    assert sorted(p.relative_to(store.root) for p in store.root.rglob("*")) == before
