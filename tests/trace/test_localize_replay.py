"""`ledger replay` and `ledger diff` of a traced training run name where it diverged: the real
recorder, the real replay, a real (small) transformer."""

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

from ledger.records.run import Run
from ledger.run.find import load_run
from ledger.store import Store

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("lm") / "proj"
    root.mkdir()
    shutil.copy(HERE / "train_lm.py", root / "train_lm.py")
    (root / ".gitignore").write_text(".ledger/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    r = run_ledger("record", "--json", "--", sys.executable, "train_lm.py", cwd=root)
    assert r.returncode == 0, r.stderr
    return root, json.loads(r.stderr.strip().splitlines()[-1])["run_id"]


def _replay(root: Path, run_id: str, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    r = run_ledger("replay", run_id, "--json", *args, cwd=root, **env)
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


def _run(root: Path, run_id: str) -> Run:
    return load_run(Store.open(root / ".ledger"), run_id)[1]


def test_the_trace_is_stored_with_the_run(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    run = _run(root, run_id)
    (ref,) = run.runtime["traces"]  # type: ignore[index]
    assert (ref["rank"], ref["every"], ref["steps"]) == (0, 1, 4)
    trace = Store.open(root / ".ledger").get_json(ref["trace"])
    assert trace["header"]["modules"][1][:2] == ["emb", "Embedding"]
    assert [s["s"] for s in trace["steps"]] == [0, 1, 2, 3]


def _steps(root: Path, run_id: str) -> list[dict[str, Any]]:
    (ref,) = _run(root, run_id).runtime["traces"]  # type: ignore[index]
    steps: list[dict[str, Any]] = Store.open(root / ".ledger").get_json(ref["trace"])["steps"]
    return steps


def test_a_replay_that_reproduces_has_no_culprit(recorded: tuple[Path, str]) -> None:
    """No culprit where the two traces are the same; where they are not, the difference the
    stored traces show, and no other. They are not always the same: in about 1 replay in 7
    under pytest (5 of 35; 0 of 45 started from a shell), the AdamW step of the first parameter
    (emb.weight) gave other bits (1,274 of its 3,200 values, 1-40 ulps) from the same gradients,
    and every later step differed while the logged loss kept its bits (7 December: the verdict
    was right, and this test, which expected no difference, failed in a clean-clone CI run).
    Under CPU load it happens from a shell too (two busy loops on the two cores: 2 of 17
    replays; a driver under `ledger record`: 4 of 80 first steps). In each, the update's inputs
    (the parameter, its gradient, AdamW's two moments as updated) were the same bits and only
    the first 1,600 of the 3,200 values came out otherwise (rows 0-24: 1,303 values, one ulp
    near 1.0), the same alternative every time. Of the update's ops on 3,200 values, only `sqrt`
    (of the second moment) runs on both of torch's threads, the first half on the calling
    thread, and torch computes it with Intel MKL, whose roots are not correctly rounded and
    change with MKL_CBWR (unset, COMPATIBLE, AVX2: 20, 530, 0 of 3,200 one ulp off). Recorded
    with MKL_CBWR=COMPATIBLE, none of 70 first steps differed. Not seen with one thread (0 of
    16) or without `ledger record` (0 of 20); why MKL's path changes from one process to the
    next was not found (7 December)."""
    root, run_id = recorded
    code, verdict = _replay(root, run_id)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    original, replay = _steps(root, run_id), _steps(root, verdict["replays"][0])
    differ = [a["s"] for a, b in zip(original, replay, strict=True) if a != b]
    if not differ:
        assert "localization" not in verdict["settings"]
        assert "traces-differ" not in verdict["labels"]
        return
    assert "traces-differ" in verdict["labels"], verdict
    assert verdict["settings"]["localization"]["step"] == differ[0], verdict


def test_a_failed_replay_names_the_first_divergence(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    code, verdict = _replay(root, run_id, T_NOGEN="1")  # shuffled without its generator
    assert code == 1 and verdict["outcome"] == "not-reproduced"
    loc = verdict["settings"]["localization"]
    assert (loc["step"], loc["phase"], loc["cause"]) == (0, "data", "data-order")
    # The localization follows what the comparison found; it does not replace it.
    assert verdict["summary"].startswith("not reproduced (bitwise; compared 4 metric values"), (
        verdict["summary"]
    )
    assert "first divergence at loss step 0: original " in verdict["summary"]
    assert "localized: step 0: batch differs (sample ids" in verdict["summary"]
    assert "(what to do: docs/how-to/localize-divergence.md#data-order)" in verdict["summary"]

    # ledger diff of the same two runs prints the chain and what to do next.
    r = run_ledger("diff", run_id, verdict["replays"][0], cwd=root)
    assert r.returncode == 0, r.stderr
    assert "localized: step 0: batch differs (sample ids" in r.stdout
    assert "→ data order" in r.stdout
    assert "next: give the DataLoader's sampler a seeded generator" in r.stdout
    assert "docs/how-to/localize-divergence.md#data-order" in r.stdout


def test_a_trace_difference_is_reported_even_below_the_metrics(
    recorded: tuple[Path, str],
) -> None:
    """The partial sums added in another order change bits the logged loss may round away."""
    root, run_id = recorded
    _, verdict = _replay(root, run_id, T_NONDET="1")
    loc = verdict["settings"]["localization"]
    assert (loc["step"], loc["phase"], loc["module"]) == (0, "forward", "blocks.0.mix")
    if verdict["outcome"] == "reproduced":
        assert "traces-differ" in verdict["labels"]
        assert any("the traces differ although" in n for n in verdict["notes"])
    else:
        assert "localized: step 0: batch identical; forward of blocks.0.mix" in verdict["summary"]

    # The web view's diff page draws the chain and marks the module in the model's tree.
    from ledger.ui import data
    from ledger.ui.pages import render

    store = Store.open(root / ".ledger")
    d = data.diff_page(store, run_id, verdict["replays"][0])
    html = render("diff.html", root="../", live=False, curves_href="../curves.html", d=d)
    assert '<p id="localization">step 0: batch identical; forward of blocks.0.mix' in html
    assert '<mark class="culprit">blocks.0.mix (ScatterMix)</mark>  ← first to differ' in html
    assert "<strong>blocks.0 (Block)</strong>" in html and "<strong>blocks (Sequential)" in html
    assert "    blocks.0.ln (LayerNorm)\n" in html  # a sibling, unmarked


def test_a_tolerance_replay_localizes_a_divergence_but_not_a_difference_within_it(
    recorded: tuple[Path, str],
) -> None:
    """Tolerance mode localizes a replay that failed, as bitwise does; a trace difference
    whose values stay within the tolerance is what the user allowed: no localization, no
    ``traces-differ`` label (only a bitwise verdict is labelled so, docs/format.md)."""
    root, run_id = recorded
    code, verdict = _replay(root, run_id, "--mode", "tolerance", T_NOGEN="1")
    assert code == 1 and verdict["outcome"] == "not-reproduced", verdict["summary"]
    loc = verdict["settings"]["localization"]
    assert (loc["step"], loc["phase"], loc["cause"]) == (0, "data", "data-order")
    assert "localized: step 0: batch differs (sample ids" in verdict["summary"]

    code, verdict = _replay(root, run_id, "--mode", "tolerance", "--rtol", "1e-3", T_NONDET="1")
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    assert "localization" not in verdict["settings"]
    assert "traces-differ" not in verdict["labels"]
    assert not any("the traces differ" in n for n in verdict["notes"])
