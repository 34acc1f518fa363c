"""`ledger replay` at the edges of what the engine decides (``replay/engine.py``): a tolerance
given on one side only, and the metric a seeds replay judges (a typo among many metrics, a
metric without a finite value, a run without metrics), each caught before any replay runs.
Real `ledger record` and `ledger replay` in a real project."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger
from test_seed_job_graces import nfs_files_busy

METRIC = r"epoch (?P<step>\d+) acc (?P<acc>\S+)"

# acc is 100.0 when recorded and 100.5 on every replay (the marker, outside the project, is
# left by the first run): 0.5 apart, 0.5% of the value.
DRIFTS = """
import sys
from pathlib import Path
marker = Path(sys.argv[1])
print("epoch 0 acc", 100.5 if marker.exists() else 100.0)
marker.write_text("ran")
"""

# ledger.seed() without a root draws one from the OS: a replay reproduces it only when it is
# given the root the original drew.
DRAWS_ROOT = """
import random, ledger
ledger.seed()
print(f"epoch 0 acc {random.random()!r}")
"""

# Takes the seed; prints its metric when recorded, and on replay exits 3 before printing it.
METRIC_ONCE = """
import sys
from pathlib import Path
import ledger
ledger.seed()
marker = Path(sys.argv[1])
if marker.exists():
    sys.exit(3)
marker.write_text("ran")
print("epoch 0 acc 0.5")
"""

# acc is 100.0 when recorded and 100.000001 on every replay: 1e-8 of the value, inside float64's
# default tolerance (rtol 1e-7 and atol 1e-7: 1.01e-5 here), outside a tolerance of 0.
NUDGES = """
import sys
from pathlib import Path
marker = Path(sys.argv[1])
print("epoch 0 acc", 100.000001 if marker.exists() else 100.0)
marker.write_text("ran")
"""

# NFS keeps a file that is removed while a process still holds it open as `.nfs<digits>`, and
# refuses to remove that until the process lets go (EBUSY, nfs_files_busy). This program leaves
# one where it runs, as one whose logger or data-loader process outlives it would on NFS.
NFS_HELD = """
from pathlib import Path
Path(".nfs0000000000b1e5a100000004").write_text("held open")
print("epoch 0 acc 0.5")
"""

# As METRIC_ONCE (exits 3 on replay before printing its metric), leaving an `.nfs` file first.
NFS_HELD_ONCE = """
import sys
from pathlib import Path
import ledger
ledger.seed()
marker = Path(sys.argv[1])
Path(".nfs0000000000b1e5a100000005").write_text("held open")
if marker.exists():
    sys.exit(3)
marker.write_text("ran")
print("epoch 0 acc 0.5")
"""

NAN = 'print("epoch 0 score nan")\nprint("epoch 1 score nan")\n'
QUIET = 'print("done")\n'


def _many(n: int) -> str:
    """A program printing ``n`` metrics m00, m01, ... on one line."""
    return f"print('epoch 0 ' + ' '.join(f'm{{i:02d}} {{i}}' for i in range({n})))\n"


def _many_regex(n: int) -> str:
    return r"epoch (?P<step>\d+) " + " ".join(f"m{i:02d} (?P<m{i:02d}>\\S+)" for i in range(n))


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "drifts.py").write_text(DRIFTS)
    (root / "nudges.py").write_text(NUDGES)
    (root / "nfs_held.py").write_text(NFS_HELD)
    (root / "nfs_held_once.py").write_text(NFS_HELD_ONCE)
    (root / "nan.py").write_text(NAN)
    (root / "draws_root.py").write_text(DRAWS_ROOT)
    (root / "metric_once.py").write_text(METRIC_ONCE)
    (root / "quiet.py").write_text(QUIET)
    (root / "many30.py").write_text(_many(30))
    (root / "many31.py").write_text(_many(31))
    init_ledger(root)
    return root


def _record(proj: Path, *argv: str, metric: str | None = METRIC) -> str:
    metrics = ("--metric", metric) if metric else ()
    r = run_ledger("record", *metrics, "--json", "--", sys.executable, *argv, cwd=proj)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stderr.strip().splitlines()[-1])["run_id"])


def _runs(proj: Path) -> list[str]:
    return sorted(p.name for p in (proj / ".ledger" / "refs" / "runs").iterdir())


@pytest.mark.parametrize(
    ("given", "outcome", "settings"),
    [
        # --rtol alone: atol is 0, not a default; 0.5 apart is outside 0.1% of 100.
        (["--rtol", "1e-3"], "not-reproduced", (1e-3, 0.0)),
        (["--rtol", "1e-2"], "reproduced", (1e-2, 0.0)),
        # --atol alone: rtol is 0; 0.5 apart is outside 0.1 and within 1.
        (["--atol", "0.1"], "not-reproduced", (0.0, 0.1)),
        (["--atol", "1"], "reproduced", (0.0, 1.0)),
    ],
)
def test_a_tolerance_given_on_one_side_takes_zero_for_the_other(
    proj: Path, tmp_path: Path, given: list[str], outcome: str, settings: tuple[float, float]
) -> None:
    run_id = _record(proj, "drifts.py", str(tmp_path / "ran"))
    r = run_ledger("replay", run_id, "--mode", "tolerance", *given, "--json", cwd=proj)
    assert r.returncode == (0 if outcome == "reproduced" else 1), r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == outcome, verdict["summary"]
    assert (verdict["settings"]["rtol"], verdict["settings"]["atol"]) == settings


@pytest.mark.parametrize(
    ("given", "outcome", "settings"),
    [
        # Neither given: each metric's dtype default (float64: rtol 1e-7, atol 1e-7), not 0.
        (["--mode", "tolerance"], "reproduced", (None, None)),
        # Bitwise compares bit for bit whatever is given; one given alone takes 0 for the
        # other there too (the replay failed with exit 7 once it had run, before: its output
        # files' comparison takes both or neither).
        (["--mode", "bitwise", "--rtol", "1e-3"], "not-reproduced", (1e-3, 0.0)),
    ],
)
def test_without_rtol_and_atol_the_dtype_defaults_hold_and_one_alone_takes_zero_in_any_mode(
    proj: Path, tmp_path: Path, given: list[str], outcome: str, settings: tuple[object, object]
) -> None:
    """docs/how-to/record-and-replay.md: tolerance is `|replay - original| <= atol +
    rtol*|original|` with per-dtype defaults; only a tolerance given on one side takes 0 for
    the other (the test above)."""
    run_id = _record(proj, "nudges.py", str(tmp_path / "ran"))
    r = run_ledger("replay", run_id, *given, "--json", cwd=proj)
    assert r.returncode == (0 if outcome == "reproduced" else 1), r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == outcome, verdict["summary"]
    assert (verdict["settings"]["rtol"], verdict["settings"]["atol"]) == settings


def test_a_workspace_file_that_nfs_holds_open_leaves_the_verdict_as_it_was(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdict is stored before the workspace is removed: a file there that cannot be
    removed (NFS's `.nfs...` file) stays, with its folders, and the replay still reports the
    verdict it stored, not a failure that says none was stored."""
    from ledger.replay.engine import replay
    from ledger.replay.options import ReplayOptions
    from ledger.store import Store

    run_id = _record(proj, "nfs_held.py")
    parent = tmp_path / "workspaces"
    parent.mkdir()
    nfs_files_busy(monkeypatch)
    store = Store.open(proj / ".ledger")
    outcome = replay(store, run_id, ReplayOptions(workspace_parent=parent))
    assert (outcome.verdict.outcome, outcome.exit_code) == ("reproduced", 0)
    (replay_id,) = outcome.verdict.replays
    assert store.refs.get(f"verdicts/{run_id}/{replay_id}") == outcome.verdict_oid
    left = [str(p.relative_to(parent)) for p in parent.rglob("*") if p.is_file()]
    (ws,) = outcome.workspaces
    assert left == [f"{ws.name}/code/.nfs0000000000b1e5a100000004"]


def test_a_failed_replay_whose_workspace_nfs_holds_reports_its_own_error(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay that fails (here no seed gave the metric) removes its workspaces: what NFS
    holds stays, and the error the user reads is still why the replay failed; the replay
    runs are indexed and no verdict is stored."""
    from ledger.errors import ReplayError
    from ledger.replay.engine import replay
    from ledger.replay.options import ReplayOptions
    from ledger.store import Store

    run_id = _record(proj, "nfs_held_once.py", str(tmp_path / "ran"))
    parent = tmp_path / "workspaces"
    parent.mkdir()
    nfs_files_busy(monkeypatch)
    store = Store.open(proj / ".ledger")
    opts = ReplayOptions(mode="seeds", seeds=2, workspace_parent=parent)
    with pytest.raises(ReplayError, match="only 0 of 2 replays produced metric 'acc'"):
        replay(store, run_id, opts)
    left = sorted(str(p.relative_to(parent)) for p in parent.rglob("*") if p.is_file())
    assert [p.split("/", 1)[1] for p in left] == ["code/.nfs0000000000b1e5a100000005"] * 2
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()
    (listed,) = json.loads(run_ledger("ls", "--json", cwd=proj).stdout)
    assert (listed["run_id"], listed["replays"]) == (run_id, 2)  # both replay runs indexed


@pytest.mark.parametrize("count", [30, 31])
def test_a_metric_typo_lists_at_most_thirty_of_the_runs_metrics(proj: Path, count: int) -> None:
    run_id = _record(proj, f"many{count}.py", metric=_many_regex(count))
    r = run_ledger("replay", run_id, "--mode", "seeds", "--metric", "m99", cwd=proj)
    assert r.returncode == 2, r.stderr
    names = ", ".join(f"m{i:02d}" for i in range(30))
    more = " and 1 more" if count > 30 else ""
    assert f"has no metric of that name; its metrics: {names}{more}\n" in r.stderr, r.stderr
    assert _runs(proj) == [run_id], "a replay ran before the typo was caught"


def test_a_metric_without_a_finite_value_is_caught_before_any_replay(proj: Path) -> None:
    run_id = _record(proj, "nan.py", metric=r"epoch (?P<step>\d+) score (?P<score>\S+)")
    # The only metric, given or chosen (not one of the names preferred: accuracy, loss, ...).
    for args in (["--metric", "score"], []):
        r = run_ledger("replay", run_id, "--mode", "seeds", *args, cwd=proj)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"run {run_id} has no finite value of metric 'score'" in r.stderr, r.stderr
        hint = "ledger: hint: choose the main metric with --metric NAME: its metrics are score\n"
        assert hint in r.stderr, r.stderr
    assert _runs(proj) == [run_id], "a replay ran"


def test_a_run_without_metrics_needs_one_named_for_seeds(proj: Path) -> None:
    run_id = _record(proj, "quiet.py", metric=None)
    r = run_ledger("replay", run_id, "--mode", "seeds", cwd=proj)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"ledger: error: run {run_id} recorded no metrics" in r.stderr, r.stderr
    assert "ledger: hint: give --metric NAME" in r.stderr
    assert _runs(proj) == [run_id], "a replay ran"


def test_a_root_the_original_drew_is_given_again_on_replay(proj: Path) -> None:
    run_id = _record(proj, "draws_root.py")
    shown = json.loads(run_ledger("show", run_id, "--json", cwd=proj).stdout)
    (seeds,) = shown["run"]["runtime"]["seeds"]
    assert seeds["root_source"] == "urandom"
    r = run_ledger("replay", run_id, "--json", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    assert verdict["outcome"] == "reproduced", verdict["summary"]


def test_seeds_that_never_print_the_metric_name_how_five_of_them_ended(
    proj: Path, tmp_path: Path
) -> None:
    run_id = _record(proj, "metric_once.py", str(tmp_path / "ran"))
    r = run_ledger("replay", run_id, "--mode", "seeds", "--seeds", "6", cwd=proj)
    assert r.returncode == 7, r.stdout + r.stderr
    ended = ", ".join(["failed (3)"] * 5)
    told = f"only 0 of 6 replays produced metric 'acc' (they ended: {ended})\n"
    assert told in r.stderr, r.stderr
    replays = sorted(set(_runs(proj)) - {run_id})  # run ids sort by start: one at a time here
    assert len(replays) == 6
    assert f"ledger: hint: `ledger log --stderr {replays[0]}` shows" in r.stderr, r.stderr
    assert not (proj / ".ledger" / "refs" / "verdicts").exists()
